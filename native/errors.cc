// Errors shaped like Node's own: an Error with `code`, negative `errno`, `syscall` and, where it helps, `path`.
#include "addon.h"

#include <uv.h>

#include <cstring>
#include <string>

namespace opencode_pty {

namespace {

// libuv names errno values exactly as Node does ("EBADF"); unknown values get Node's fallback.
std::string ErrnoName(int err) {
  char name[64];
  uv_err_name_r(-err, name, sizeof name);
  if (std::strncmp(name, "Unknown", 7) == 0) return "UNKNOWN";
  return name;
}

// The GNU strerror_r (g++ defines _GNU_SOURCE) is thread-safe and returns the text to use.
std::string ErrnoText(int err) {
  char buffer[128];
  return strerror_r(err, buffer, sizeof buffer);
}

void ThrowWithCode(Napi::Error error, const std::string& code) {
  error.Set("code", code);
  error.ThrowAsJavaScriptException();
}

}  // namespace

void ThrowErrno(Napi::Env env, int err, const char* syscall, const std::string* path) {
  const std::string code = ErrnoName(err);
  std::string message = std::string(syscall) + ": " + code + " (" + ErrnoText(err) + ")";
  if (path) message += " '" + *path + "'";
  Napi::Error error = Napi::Error::New(env, message);
  // Node reports errno as the negative value (libuv's convention); do the same.
  error.Set("errno", Napi::Number::New(env, -err));
  error.Set("syscall", syscall);
  if (path) error.Set("path", *path);
  ThrowWithCode(error, code);
}

void ThrowUv(Napi::Env env, int status, const char* syscall) {
  ThrowErrno(env, -status, syscall);
}

void ThrowType(Napi::Env env, const std::string& message) {
  ThrowWithCode(Napi::TypeError::New(env, message), "ERR_INVALID_ARG_TYPE");
}

void ThrowRange(Napi::Env env, const std::string& message) {
  ThrowWithCode(Napi::RangeError::New(env, message), "ERR_OUT_OF_RANGE");
}

void ThrowCode(Napi::Env env, const char* code, const std::string& message) {
  ThrowWithCode(Napi::Error::New(env, message), code);
}

}  // namespace opencode_pty
