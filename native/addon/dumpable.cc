// The process's dumpable flag (prctl(2) PR_SET_DUMPABLE): the broker and its workers clear it at start, so
// that another uid-0 process without CAP_SYS_PTRACE cannot ptrace them, nor open their /proc/<pid>/mem or
// fds, and act as the supervisor (docs/security.md "Kept sessions across the supervisor").
#include "addon.h"

#include <errno.h>
#include <sys/prctl.h>

namespace opencode_pty {

namespace {

Napi::Value SetNonDumpable(const Napi::CallbackInfo& info) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    ThrowErrno(info.Env(), errno, "prctl");
    return Napi::Value();
  }
  return info.Env().Undefined();
}

Napi::Value IsDumpable(const Napi::CallbackInfo& info) {
  const int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  if (dumpable < 0) {
    ThrowErrno(info.Env(), errno, "prctl");
    return Napi::Value();
  }
  return Napi::Boolean::New(info.Env(), dumpable != 0);
}

}  // namespace

void InitDumpable(Napi::Env env, Napi::Object exports) {
  exports.Set("setNonDumpable", Napi::Function::New(env, SetNonDumpable, "setNonDumpable"));
  exports.Set("isDumpable", Napi::Function::New(env, IsDumpable, "isDumpable"));
}

}  // namespace opencode_pty
