// recvmsg/sendmsg with SCM_RIGHTS: the byte paths that can carry descriptors, which libuv's read() would discard.
#include "addon.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

// SCM_PIDFD (Linux 6.5) installs a pidfd in the receiver; older headers lack it.
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04
#endif

namespace opencode_pty {

namespace {

// In ints: room for one SCM_CREDENTIALS (a struct ucred) and one SCM_PIDFD beside the descriptors.
constexpr size_t kForeignControlRoom = 16;

// Control buffers as cmsghdr arrays so CMSG_* sees the alignment it expects.
std::vector<cmsghdr> ControlBuffer(size_t fdCount) {
  const size_t space = CMSG_SPACE(sizeof(int) * fdCount);
  return std::vector<cmsghdr>((space + sizeof(cmsghdr) - 1) / sizeof(cmsghdr));
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// A peer may send a socket with SO_LINGER set and data it cannot deliver: close(2) on it would then
// block the closing thread for as long as the peer chose (socket(7) "SO_LINGER"), freezing the
// broker or a worker. Every received socket has lingering turned off before anyone can close it.
void DisarmLinger(int fd) {
  int type;
  socklen_t size = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0) return;  // not a socket
  const linger off = {0, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
}

// A stream peer's MSG_OOB byte can carry descriptors (queue_oob, unix_scm_to_skb), and a plain read
// that meets it drops it, releasing them in the reading thread (manage_oob: kfree_skb), a lingering
// TCP socket among them holding that thread for its linger time. Read inline (SO_OOBINLINE), it is
// a byte like any other and its descriptors arrive here. Set before every read: the flag is the
// socket's, any of its holders may clear it.
void InlineOob(int fd) {
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_OOBINLINE, &one, sizeof one);  // not a socket: nothing to read inline
}

// Collects every descriptor the kernel installed, bounded by what it says it wrote (msg_controllen).
// With `credentials`, a whole SCM_CREDENTIALS (there only on a socket with SO_PASSCRED set: the kernel's
// record of the sender, which a sender without CAP_SYS_ADMIN/CAP_SETUID cannot forge) is kept there
// rather than counted as foreign.
void CollectFds(msghdr* msg, std::vector<int>* fds, bool* foreign, ucred* credentials = nullptr, bool* hasCredentials = nullptr) {
  const auto* end = static_cast<const unsigned char*>(msg->msg_control) + msg->msg_controllen;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(msg, cmsg)) {
    const bool rights = cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS;
    const bool pidfd = cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_PIDFD;
    const bool creds = cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS && cmsg->cmsg_len == CMSG_LEN(sizeof(ucred));
    if (creds && credentials != nullptr && CMSG_DATA(cmsg) + sizeof(ucred) <= end) {
      std::memcpy(credentials, CMSG_DATA(cmsg), sizeof(ucred));
      *hasCredentials = true;
      continue;
    }
    if (!rights) *foreign = true;
    // A foreign message that installed a descriptor is still reported, so the caller can close it.
    if ((!rights && !pidfd) || cmsg->cmsg_len < CMSG_LEN(0)) continue;
    const unsigned char* data = CMSG_DATA(cmsg);
    const size_t available = data < end ? static_cast<size_t>(end - data) : 0;
    const size_t bytes = std::min(static_cast<size_t>(cmsg->cmsg_len - CMSG_LEN(0)), available);
    for (size_t i = 0; i + sizeof(int) <= bytes; i += sizeof(int)) {
      int fd;
      std::memcpy(&fd, data + i, sizeof fd);  // CMSG_DATA need not be int-aligned for the compiler
      DisarmLinger(fd);
      fds->push_back(fd);
    }
  }
}

}  // namespace

QueuedMessages::QueuedMessages()
    : data_(64 * 1024), control_(ControlBuffer(static_cast<size_t>(kMaxFdsPerMessage) + kForeignControlRoom)) {}

bool QueuedMessages::Next(int fd, std::vector<int>* fds) {
  const size_t room = static_cast<size_t>(kMaxFdsPerMessage) + kForeignControlRoom;
  InlineOob(fd);
  for (;;) {
    iovec iov{data_.data(), data_.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control_.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * room);
    const ssize_t received = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (received < 0 && errno == EINTR) continue;
    if (received < 0) return false;
    const size_t before = fds->size();
    bool foreign = false;
    CollectFds(&msg, fds, &foreign);
    return received > 0 || fds->size() > before;
  }
}

namespace {

Napi::Value Recvmsg(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  uint8_t* data;
  size_t offset, length;
  int64_t maxFds;
  if (!ArgFd(info, 0, &fd) || !ArgBytes(info, 1, &data, &offset, &length) ||
      !ArgInt(info, 4, "maxFds", 0, kMaxFdsPerMessage, &maxFds)) {
    return Napi::Value();
  }
  // A zero-length read returns 0, which would be indistinguishable from EOF.
  if (length == 0) {
    ThrowRange(env, "The value of \"length\" is out of range. It must be >= 1");
    return Napi::Value();
  }
  // Room for every descriptor one message can carry, whatever the caller expects (it checks the
  // count): the kernel releases the ones a read has no room for itself, in this thread, on the way
  // back from recvmsg (scm_detach_fds, then fput's task work), where no linger can be disarmed first;
  // a peer's lingering TCP socket among them would hold this thread for its linger time. Extra
  // room: a foreign control message (SCM_CREDENTIALS, SCM_PIDFD) beside the descriptors.
  (void)maxFds;
  const size_t room = static_cast<size_t>(kMaxFdsPerMessage) + kForeignControlRoom;
  std::vector<cmsghdr> control = ControlBuffer(room);
  iovec iov{data + offset, length};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * room);
  InlineOob(fd);
  ssize_t received;
  do {
    received = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return env.Null();
    ThrowErrno(env, errno, "recvmsg");
    return Napi::Value();
  }

  std::vector<int> fds;
  bool foreign = false;
  ucred credentials{};
  bool hasCredentials = false;
  CollectFds(&msg, &fds, &foreign, &credentials, &hasCredentials);

  Napi::Object result = Napi::Object::New(env);
  if (hasCredentials) {
    Napi::Object sender = Napi::Object::New(env);
    sender.Set("pid", Napi::Number::New(env, credentials.pid));
    sender.Set("uid", Napi::Number::New(env, credentials.uid));
    sender.Set("gid", Napi::Number::New(env, credentials.gid));
    result.Set("credentials", sender);
  }
  Napi::Array list = Napi::Array::New(env, fds.size());
  for (size_t i = 0; i < fds.size(); i++) list.Set(static_cast<uint32_t>(i), Napi::Number::New(env, fds[i]));
  result.Set("bytes", Napi::Number::New(env, static_cast<double>(received)));
  result.Set("fds", list);
  result.Set("truncated", Napi::Boolean::New(env, (msg.msg_flags & MSG_TRUNC) != 0));
  result.Set("controlTruncated", Napi::Boolean::New(env, (msg.msg_flags & MSG_CTRUNC) != 0));
  result.Set("foreignControl", Napi::Boolean::New(env, foreign));
  // The caller never learns of descriptors it cannot see: close them rather than leak them.
  if (env.IsExceptionPending()) {
    CloseAll(fds);
    return Napi::Value();
  }
  return result;
}

// DrainPeer's work: shutdown(SHUT_RD), then every queued message read away and its descriptors closed;
// false when it stopped because the close pool's queue is long (the rest stays queued on `fd`).
bool DrainQueued(int fd, FastDevices* fast, double* messages, ReceivedCloseCounts* counts) {
  shutdown(fd, SHUT_RD);  // ENOTCONN, EBADF: nothing can be queued behind it
  static QueuedMessages reader;  // the event loop's thread only
  // After the shutdown the queue only shrinks: the bound is a guard, one socket buffer needs far fewer.
  for (int reads = 0; reads < 65536; reads++) {
    // The close pool's queue is long (its threads held by a file system that never answers FLUSH, or
    // a burst they have not caught up with): no more is taken from this peer for now. What it queued
    // stays in flight, charged to the sender, and the caller drains again later (peer-close.ts).
    if (CloseQueueLong()) return false;
    std::vector<int> fds;
    if (!reader.Next(fd, &fds)) break;
    CloseReceived(fds, fast, counts);
    (*messages)++;
  }
  return true;
}

// A refusal in one call, for connections refused by the thousand under a flood: `frame` sent as
// sendmsg does (MSG_DONTWAIT | MSG_NOSIGNAL) with any failure ignored (a refused peer may be gone or
// not reading: nothing is thrown, since an exception per refusal was a sixth of the broker's CPU
// under a flood), then DrainPeer's drain, and close(fd) when it completed. Returns whether `fd` is
// closed; when not, the close pool's queue is long and the caller drains it later (peer-close.ts).
Napi::Value RefusePeer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  uint8_t* data;
  size_t offset, length;
  if (!ArgFd(info, 0, &fd) || !ArgBytes(info, 1, &data, &offset, &length)) return Napi::Value();
  ssize_t sent;
  do {
    sent = send(fd, data + offset, length, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  FastDevices fast;  // no list: the mount table is read only if a received file needs it
  double messages = 0;
  ReceivedCloseCounts counts;
  if (!DrainQueued(fd, &fast, &messages, &counts)) return Napi::Boolean::New(env, false);
  close(fd);
  return Napi::Boolean::New(env, true);
}

// The last close of a peer's connection, in one call: shut our reading side (a Unix stream peer can
// queue nothing more: its sends fail with EPIPE), then read away every queued message, closing each
// descriptor on it as CloseReceived (received-close.cc) decides, so the kernel has none of the peer's left to release in the
// closing thread (unix_release_sock frees unread messages there, and fput's task work runs a lingering
// socket's close in it). Up to 253 descriptors a message and one socket buffer of messages: native,
// so even a full queue of them costs little more than the kernel's own release.
Napi::Value DrainPeer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  // Without a list the mount table is read here, and only if a received file needs it.
  FastDevices fast;
  if (!fast.Parse(info[1])) {
    ThrowType(env, "The \"fastDevices\" argument must be an array of \"major:minor\" strings");
    return Napi::Value();
  }
  double messages = 0;
  ReceivedCloseCounts counts;
  const bool complete = DrainQueued(fd, &fast, &messages, &counts);
  Napi::Object result = Napi::Object::New(env);
  result.Set("messages", Napi::Number::New(env, messages));
  result.Set("closed", Napi::Number::New(env, counts.closed));
  result.Set("detached", Napi::Number::New(env, counts.detached));
  result.Set("complete", Napi::Boolean::New(env, complete));
  return result;
}

Napi::Value Sendmsg(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  uint8_t* data;
  size_t offset, length;
  std::vector<int> fds;
  if (!ArgFd(info, 0, &fd) || !ArgBytes(info, 1, &data, &offset, &length) || !ArgFdList(info, 4, &fds)) {
    return Napi::Value();
  }
  // A stream socket sends nothing for zero bytes, so descriptors attached to them would vanish.
  if (length == 0 && !fds.empty()) {
    ThrowRange(env, "The value of \"length\" is out of range. It must be >= 1 when sending fds");
    return Napi::Value();
  }
  iovec iov{data + offset, length};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<cmsghdr> control;
  if (!fds.empty()) {
    control = ControlBuffer(fds.size());
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t sent;
  do {
    sent = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Napi::Number::New(env, -1);
    ThrowErrno(env, errno, "sendmsg");
    return Napi::Value();
  }
  return Napi::Number::New(env, static_cast<double>(sent));
}

// recv(MSG_PEEK) with no control buffer: the bytes are looked at and left queued, and so are the
// descriptors riding on them (unix(7): without room for them the kernel installs none and sets
// MSG_CTRUNC, and a peek takes nothing off the queue), for whoever reads them for real. The broker
// tells version 3's requests apart this way while a START's directory fd stays queued for its worker.
// Returns the bytes peeked (0 at EOF), or -1 when nothing is queued yet.
Napi::Value Peek(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  uint8_t* data;
  size_t offset, length;
  if (!ArgFd(info, 0, &fd) || !ArgBytes(info, 1, &data, &offset, &length)) return Napi::Value();
  if (length == 0) {
    ThrowRange(env, "The value of \"length\" is out of range. It must be >= 1");
    return Napi::Value();
  }
  ssize_t received;
  do {
    received = recv(fd, data + offset, length, MSG_PEEK | MSG_DONTWAIT);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Napi::Number::New(env, -1);
    ThrowErrno(env, errno, "recv");
    return Napi::Value();
  }
  return Napi::Number::New(env, static_cast<double>(received));
}

}  // namespace

void InitFdPassing(Napi::Env env, Napi::Object exports) {
  exports.Set("recvmsg", Napi::Function::New(env, Recvmsg, "recvmsg"));
  exports.Set("sendmsg", Napi::Function::New(env, Sendmsg, "sendmsg"));
  exports.Set("peek", Napi::Function::New(env, Peek, "peek"));
  exports.Set("drainPeer", Napi::Function::New(env, DrainPeer, "drainPeer"));
  exports.Set("refusePeer", Napi::Function::New(env, RefusePeer, "refusePeer"));
}

}  // namespace opencode_pty
