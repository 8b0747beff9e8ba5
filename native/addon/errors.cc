// Errors shaped like Node's own: an Error with `code`, negative `errno`, `syscall` and, where it helps, `path`.
#include "addon.h"

#include <cstring>
#include <string>

namespace opencode_pty {

namespace {

// The errno's symbolic name as Node gives it ("EBADF"), from glibc (2.32+) rather than libuv's
// uv_err_name_r: Bun implements no such libuv call and aborts the process on it, and the client's
// addon calls run on Bun too. Unknown values get Node's fallback.
std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : "UNKNOWN";
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
