// Descriptor flags Node cannot set on an fd it does not own: duplicate close-on-exec, O_NONBLOCK, FD_CLOEXEC.
#include "addon.h"

#include <errno.h>
#include <fcntl.h>

namespace opencode_pty {

namespace {

Napi::Value DupCloexec(const Napi::CallbackInfo& info) {
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) {
    ThrowErrno(info.Env(), errno, "fcntl");
    return Napi::Value();
  }
  return Napi::Number::New(info.Env(), copy);
}

Napi::Value SetNonBlocking(const Napi::CallbackInfo& info) {
  int fd;
  bool on;
  if (!ArgFd(info, 0, &fd) || !ArgBool(info, 1, "on", &on)) return Napi::Value();
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) {
    ThrowErrno(info.Env(), errno, "fcntl");
    return Napi::Value();
  }
  const int wanted = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (wanted != flags && fcntl(fd, F_SETFL, wanted) < 0) {
    ThrowErrno(info.Env(), errno, "fcntl");
    return Napi::Value();
  }
  return info.Env().Undefined();
}

Napi::Value SetCloexec(const Napi::CallbackInfo& info) {
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  const int flags = fcntl(fd, F_GETFD);
  if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
    ThrowErrno(info.Env(), errno, "fcntl");
    return Napi::Value();
  }
  return info.Env().Undefined();
}

}  // namespace

void InitFdFlags(Napi::Env env, Napi::Object exports) {
  exports.Set("dupCloexec", Napi::Function::New(env, DupCloexec, "dupCloexec"));
  exports.Set("setNonBlocking", Napi::Function::New(env, SetNonBlocking, "setNonBlocking"));
  exports.Set("setCloexec", Napi::Function::New(env, SetCloexec, "setCloexec"));
}

}  // namespace opencode_pty
