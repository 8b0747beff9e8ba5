// Closing the descriptors a peer sent, so that no close of ours can wait on the peer: what closes at
// once is closed here, the rest on the close pool (close-pool.cc).
#include "addon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <unordered_map>

namespace opencode_pty {

const std::unordered_set<dev_t>& FastDevices::Get() {
  if (known) return devices;
  known = true;
  const int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return devices;  // no mount table: every file goes to the close pool
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  close(fd);
  std::unordered_map<dev_t, bool> fuse;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    unsigned major, minor;
    if (sscanf(line.c_str(), "%*s %*s %u:%u", &major, &minor) != 2) continue;
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    fuse[makedev(major, minor)] = line.compare(dash + 3, 4, "fuse") == 0;
  }
  for (const auto& [device, isFuse] : fuse) {
    if (!isFuse) devices.insert(device);
  }
  return devices;
}

bool FastDevices::Parse(Napi::Value value) {
  if (value.IsUndefined()) return true;
  if (!value.IsArray()) return false;
  known = true;
  Napi::Array list = value.As<Napi::Array>();
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value item = list.Get(i);
    unsigned major, minor;
    if (!item.IsString() || sscanf(item.As<Napi::String>().Utf8Value().c_str(), "%u:%u", &major, &minor) != 2) return false;
    devices.insert(makedev(major, minor));
  }
  return true;
}

namespace {

enum class CloseKind { kAtOnce, kSocket, kSlow };

// From the kernel's cached attributes and /proc alone (no file system is asked):
// - a pipe, a file on one of `fast` (our mounts that are not FUSE) or an anonymous inode closes at once;
// - a socket goes to the pool: a Unix socket's last close frees its own queue in the closing thread
//   (unix_release_sock), a peer's lingering TCP socket or FUSE file in it included; a TCP socket's
//   linger was disarmed on receipt, but a sender that kept a copy can arm it again before our close;
// - anything else (FUSE, a mount we cannot see) too: close(2) sends FLUSH and waits for the answer.
CloseKind Classify(int fd, FastDevices* fast, uint64_t* cookie) {
  struct statx stx;
  // EBADF: not open, nothing to wait for. Any other failure proves nothing: root's statx of a file on a
  // user's FUSE mount without allow_other fails with EACCES (fs/fuse/dir.c fuse_getattr), while its
  // close still sends FLUSH and waits for the answer.
  if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &stx) < 0) {
    return errno == EBADF ? CloseKind::kAtOnce : CloseKind::kSlow;
  }
  if (S_ISSOCK(stx.stx_mode)) {
    // A socket is known by its cookie (SO_COOKIE: never reused), not its inode: an O_PATH open of
    // /proc/<pid>/fd/N gives a second file on the same sockfs inode that is no socket and holds none,
    // so the real socket beside it would be taken for a copy and closed here, its last reference.
    socklen_t size = sizeof *cookie;
    if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &size) != 0) return CloseKind::kSlow;
    return CloseKind::kSocket;
  }
  if (S_ISFIFO(stx.stx_mode)) return CloseKind::kAtOnce;
  if (fast->Get().count(makedev(stx.stx_dev_major, stx.stx_dev_minor)) > 0) return CloseKind::kAtOnce;
  char link[64], target[16];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target);
  return n >= 11 && std::memcmp(target, "anon_inode:", 11) == 0 ? CloseKind::kAtOnce : CloseKind::kSlow;
}

}  // namespace

void CloseReceived(const std::vector<int>& fds, FastDevices* fast, ReceivedCloseCounts* counts) {
  // A socket has one file (sock_alloc_file; its cookie names it), and a socket's close
  // does its work at the last reference only (socket_file_ops has no flush): while one copy of it is
  // held, closing another returns at once. Of the copies of one socket in a batch only one goes to
  // the pool. Not so for files: FUSE sends FLUSH at every close(2) of every copy (filp_close).
  std::unordered_map<uint64_t, int> socketCopy;  // by socket cookie
  for (int fd : fds) {
    uint64_t cookie = 0;
    const CloseKind kind = Classify(fd, fast, &cookie);
    if (kind == CloseKind::kSocket) {
      // The first copy is kept for the pool; a later one closes at once while that one is held.
      if (socketCopy.emplace(cookie, fd).second) continue;
      close(fd);
      counts->closed++;
    } else if (kind == CloseKind::kAtOnce) {
      close(fd);
      counts->closed++;
    } else {
      CloseOnThread(fd);
      counts->detached++;
    }
  }
  for (const auto& [cookie, fd] : socketCopy) {
    CloseOnThread(fd);
    counts->detached++;
  }
}

namespace {

Napi::Value CloseReceivedJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<int> fds;
  if (!ArgFdList(info, 0, &fds)) return Napi::Value();
  FastDevices fast;
  if (!fast.Parse(info[1])) {
    ThrowType(env, "The \"fastDevices\" argument must be an array of \"major:minor\" strings");
    return Napi::Value();
  }
  ReceivedCloseCounts counts;
  CloseReceived(fds, &fast, &counts);
  Napi::Object result = Napi::Object::New(env);
  result.Set("closed", Napi::Number::New(env, counts.closed));
  result.Set("detached", Napi::Number::New(env, counts.detached));
  return result;
}

}  // namespace

void InitReceivedClose(Napi::Env env, Napi::Object exports) {
  exports.Set("closeReceived", Napi::Function::New(env, CloseReceivedJs, "closeReceived"));
}

}  // namespace opencode_pty
