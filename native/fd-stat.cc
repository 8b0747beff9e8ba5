// What a descriptor is (device, inode, type), from the kernel's inode cache alone.
#include "addon.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <stdint.h>

#include <string>

namespace opencode_pty {

namespace {

// statx(AT_STATX_DONT_SYNC) answers from the attributes the kernel already holds: a network or FUSE
// file system is not asked (fuse_update_get_attr and nfs_getattr honour the flag), so a file system
// that never answers cannot hold this thread, and a peer's descriptor never makes root wait on it.
// Device, inode number and file type never change for a live inode, so cached values are exact.
Napi::Value StatCached(const Napi::CallbackInfo& info) {
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &stx) < 0) {
    ThrowErrno(info.Env(), errno, "statx");
    return Napi::Value();
  }
  Napi::Env env = info.Env();
  Napi::Object result = Napi::Object::New(env);
  // makedev, as libuv builds Node's st_dev from statx.
  result.Set("dev", Napi::BigInt::New(env, static_cast<uint64_t>(makedev(stx.stx_dev_major, stx.stx_dev_minor))));
  result.Set("ino", Napi::BigInt::New(env, static_cast<uint64_t>(stx.stx_ino)));
  result.Set("directory", Napi::Boolean::New(env, S_ISDIR(stx.stx_mode)));
  // Closing a socket (its linger disarmed on receipt) or a pipe never waits on a file system.
  result.Set("socketOrPipe", Napi::Boolean::New(env, S_ISSOCK(stx.stx_mode) || S_ISFIFO(stx.stx_mode)));
  // But the last close of a Unix socket frees what is queued on it in the closing thread, a peer's
  // lingering TCP socket among them, whose linger nobody disarmed (unix_release_sock).
  result.Set("unixSocket", Napi::Boolean::New(env, S_ISSOCK(stx.stx_mode) && IsUnixSocket(fd)));
  // As /proc/self/mountinfo's third field names a mount's device.
  result.Set("device", Napi::String::New(env, std::to_string(stx.stx_dev_major) + ":" + std::to_string(stx.stx_dev_minor)));
  return result;
}


// close(2) on a peer's file on FUSE sends FLUSH and waits for the answer without end (the kernel's
// forced requests wait uninterruptibly): such a descriptor is closed on a thread of its own, so
// only that thread can be held, never the event loop.
// Closes on detached threads that have not returned yet: a worker with one is not clean to reuse.
std::atomic<int> pendingCloses{0};
// Descriptors left open at the bound (or when no thread could be had): never closed here, since a
// close on this thread could hold it for good; the process is not clean to reuse, and its exit
// releases them.
std::atomic<int> parkedFds{0};

void* CloseThread(void* arg) {
  close(static_cast<int>(reinterpret_cast<intptr_t>(arg)));
  pendingCloses--;
  return nullptr;
}

}  // namespace

// SO_DOMAIN (socket(7)); a socket whose domain cannot be read is taken for one, so it is closed on a thread.
bool IsUnixSocket(int fd) {
  int domain = 0;
  socklen_t size = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0) return true;
  return domain == AF_UNIX;
}

bool CloseThreadsFull() {
  return pendingCloses.load() >= kMaxCloseThreads;
}

bool CloseOnThread(int fd) {
  // A full socket buffer carries some 140,000 descriptors: one thread each would be a thread per
  // descriptor the peer chose (and, at the system's limit, no thread for anyone). Bounded instead.
  if (pendingCloses.fetch_add(1) >= kMaxCloseThreads) {
    pendingCloses--;
    parkedFds++;
    return false;
  }
  pthread_attr_t attr;
  pthread_t thread;
  bool started = false;
  if (pthread_attr_init(&attr) == 0) {
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    started = pthread_create(&thread, &attr, CloseThread, reinterpret_cast<void*>(static_cast<intptr_t>(fd))) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!started) {
    // No thread to be had (EAGAIN): left open, as at the bound; a close here could hold the event loop.
    pendingCloses--;
    parkedFds++;
  }
  return started;
}

void ParkFd() {
  parkedFds++;
}

namespace {

Napi::Value CloseDetached(const Napi::CallbackInfo& info) {
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  return Napi::Boolean::New(info.Env(), CloseOnThread(fd));
}

}  // namespace

void InitFdStat(Napi::Env env, Napi::Object exports) {
  exports.Set("statCached", Napi::Function::New(env, StatCached, "statCached"));
  exports.Set("closeDetached", Napi::Function::New(env, CloseDetached, "closeDetached"));
  exports.Set("pendingCloses", Napi::Function::New(env, [](const Napi::CallbackInfo& info) -> Napi::Value {
    return Napi::Number::New(info.Env(), pendingCloses.load() + parkedFds.load());
  }, "pendingCloses"));
  exports.Set("closeThreads", Napi::Function::New(env, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Object result = Napi::Object::New(info.Env());
    result.Set("running", Napi::Number::New(info.Env(), pendingCloses.load()));
    result.Set("parked", Napi::Number::New(info.Env(), parkedFds.load()));
    result.Set("max", Napi::Number::New(info.Env(), kMaxCloseThreads));
    return result;
  }, "closeThreads"));
}

}  // namespace opencode_pty
