// Declarations shared by the addon's source files: errors, argument checks and each module's registration.
#ifndef OPENCODE_PTY_ADDON_H
#define OPENCODE_PTY_ADDON_H

#include <napi.h>

#include <string>

namespace opencode_pty {

// --- errors.cc: errors shaped like Node's own (code, errno, syscall, optional path).

// Throws an Error for a positive errno value, e.g. "recvmsg: EBADF (Bad file descriptor)".
void ThrowErrno(Napi::Env env, int err, const char* syscall, const std::string* path = nullptr);
// Throws an Error for a negative libuv status (libuv's codes are negative errno values on Linux).
void ThrowUv(Napi::Env env, int status, const char* syscall);
// TypeError with code ERR_INVALID_ARG_TYPE.
void ThrowType(Napi::Env env, const std::string& message);
// RangeError with code ERR_OUT_OF_RANGE.
void ThrowRange(Napi::Env env, const std::string& message);
// Error with an arbitrary stable code (for conditions that have no errno).
void ThrowCode(Napi::Env env, const char* code, const std::string& message);

// --- args.cc: argument checks. Each returns false after throwing, so callers just `return`.

// An integer in [min, max]; TypeError for a non-number, RangeError for a fraction or out of range.
bool ArgInt(const Napi::CallbackInfo& info, size_t index, const char* name, int64_t min, int64_t max,
            int64_t* out);
// A descriptor: an integer in [0, INT_MAX].
bool ArgFd(const Napi::CallbackInfo& info, size_t index, int* out);
// A string without NUL bytes.
bool ArgString(const Napi::CallbackInfo& info, size_t index, const char* name, std::string* out);
bool ArgBool(const Napi::CallbackInfo& info, size_t index, const char* name, bool* out);
// A Buffer or other Uint8Array and a checked [offset, offset + length) window inside it.
bool ArgBytes(const Napi::CallbackInfo& info, size_t index, uint8_t** data, size_t* offset, size_t* length);

// --- fd-stat.cc: close(fd) on a detached thread (for a descriptor whose close may never return).
// At most kMaxCloseThreads at once per process; beyond, the descriptor is left open (false).
constexpr int kMaxCloseThreads = 64;
bool CloseOnThread(int fd);
// Whether a socket is AF_UNIX (its last close frees its queue, a peer's descriptors in it, in our thread).
bool IsUnixSocket(int fd);
// Whether every close thread is taken: a caller stops taking descriptors from its peer.
bool CloseThreadsFull();
// Counts a descriptor left open on purpose (a peer's socket whose queue is left to the process's exit).
void ParkFd();

// --- Registration of each module's functions on the exports object.
void InitFdFlags(Napi::Env env, Napi::Object exports);
void InitFdPassing(Napi::Env env, Napi::Object exports);
void InitFdStat(Napi::Env env, Napi::Object exports);
void InitPeer(Napi::Env env, Napi::Object exports);
void InitSockets(Napi::Env env, Napi::Object exports);
void InitWatch(Napi::Env env, Napi::Object exports);

}  // namespace opencode_pty

#endif
