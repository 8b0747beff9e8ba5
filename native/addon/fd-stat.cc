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

}  // namespace

void InitFdStat(Napi::Env env, Napi::Object exports) {
  exports.Set("statCached", Napi::Function::New(env, StatCached, "statCached"));
}

}  // namespace opencode_pty
