// Declarations shared by the addon's source files: errors, argument checks and each module's registration.
#ifndef OPENCODE_PTY_ADDON_H
#define OPENCODE_PTY_ADDON_H

#include <napi.h>
#include <sys/socket.h>

#include <sys/types.h>

#include <string>
#include <unordered_set>
#include <vector>

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
// SCM_MAX_FD in the kernel (include/net/scm.h): no message carries more descriptors.
constexpr int64_t kMaxFdsPerMessage = 253;
// Optional (undefined or null: none): an array of at most kMaxFdsPerMessage descriptors.
bool ArgFdList(const Napi::CallbackInfo& info, size_t index, std::vector<int>* out);
// A Buffer or other Uint8Array and a checked [offset, offset + length) window inside it.
bool ArgBytes(const Napi::CallbackInfo& info, size_t index, uint8_t** data, size_t* offset, size_t* length);

// --- fd-passing.cc
// One queued message at a time from a socket, every descriptor on it installed (close-on-exec) and its
// linger disarmed (so its close cannot wait on the network): a drain of what a peer queued, in the
// event loop (drainPeer) or on a close thread (close-pool.cc). Holds its own buffers: one per thread.
class QueuedMessages {
 public:
  QueuedMessages();
  // Reads one message (MSG_DONTWAIT), appending its descriptors; false once nothing is left (would
  // block, end of stream, an error).
  bool Next(int fd, std::vector<int>* fds);

 private:
  std::vector<unsigned char> data_;
  std::vector<cmsghdr> control_;
};

// --- close-pool.cc: close(fd) on one of at most kMaxCloseThreads threads, fed from one queue (for a
// descriptor whose close may never return). Queued descriptors stay open until a thread is free.
constexpr int kMaxCloseThreads = 64;
// A queue this long means threads are held (or a burst outran them): a drain takes no more for now.
constexpr size_t kMaxQueuedCloses = 1024;
void CloseOnThread(int fd);
// SO_DOMAIN (socket(7)) is AF_UNIX: its last close frees its queue in the closing thread.
bool IsUnixSocket(int fd);
bool CloseQueueLong();
struct CloseCounts {
  int threads;  // running
  int closing;  // inside close(2)
  int queued;   // waiting for a thread
};
CloseCounts CloseCountsNow();

// --- received-close.cc: closing a peer's descriptors, at once where that cannot wait, else on the pool.
// Devices ("major:minor") of the mounts we see whose type is not FUSE, from /proc/self/mountinfo
// (proc(5) "mountinfo": after the optional fields, " - " precedes the type; a device's last line
// wins), read only when a received file needs it: a connection that queued no descriptor (every one,
// where the kernel refuses them: SO_PASSRIGHTS) costs no read of the mount table. Or a caller's list.
struct FastDevices {
  bool known = false;
  std::unordered_set<dev_t> devices;
  const std::unordered_set<dev_t>& Get();
  // An optional JS array of "major:minor" strings; false for anything else.
  bool Parse(Napi::Value value);
};
struct ReceivedCloseCounts {
  double closed = 0;    // here, at once
  double detached = 0;  // handed to the close pool
};
void CloseReceived(const std::vector<int>& fds, FastDevices* fast, ReceivedCloseCounts* counts);

// --- Registration of each module's functions on the exports object.
void InitClosePool(Napi::Env env, Napi::Object exports);
void InitDumpable(Napi::Env env, Napi::Object exports);
void InitFdFlags(Napi::Env env, Napi::Object exports);
void InitFdPassing(Napi::Env env, Napi::Object exports);
void InitFdStat(Napi::Env env, Napi::Object exports);
void InitPeer(Napi::Env env, Napi::Object exports);
void InitReceivedClose(Napi::Env env, Napi::Object exports);
void InitSockets(Napi::Env env, Napi::Object exports);
void InitWatch(Napi::Env env, Napi::Object exports);

}  // namespace opencode_pty

#endif
