// Unix sockets Node cannot make for us: socketpairs with set buffers, listen/accept/connect on raw fds, sd_notify.
#include "addon.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <vector>
#include <string>

namespace opencode_pty {

namespace {

// 128 KiB each way; the kernel doubles what it is given (socket(7)) and reports 262144.
constexpr int kPairBufferBytes = 128 * 1024;

// close() that keeps errno for the error being reported.
void CloseKeepingErrno(int fd) {
  const int saved = errno;
  close(fd);
  errno = saved;
}

// Fills a sockaddr_un for a path; with abstractAllowed a leading '@' names the abstract namespace
// (unix(7): the name is the bytes after a leading NUL, and the address length says where it ends).
bool UnixAddress(Napi::Env env, const std::string& path, bool abstractAllowed, const char* syscall,
                 sockaddr_un* address, socklen_t* length) {
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  if (path.empty()) {
    ThrowErrno(env, ENOENT, syscall, &path);
    return false;
  }
  const bool abstract = abstractAllowed && path[0] == '@';
  // Room for the terminating NUL of a path, or the leading NUL of an abstract name.
  if (path.size() > sizeof address->sun_path - 1) {
    ThrowErrno(env, ENAMETOOLONG, syscall, &path);
    return false;
  }
  if (abstract) {
    std::memcpy(address->sun_path + 1, path.data() + 1, path.size() - 1);
    *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  } else {
    std::memcpy(address->sun_path, path.data(), path.size());
    *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  }
  return true;
}

Napi::Value Socketpair(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // An optional buffer size (tests: a tiny one makes a peer's send stop inside a frame).
  int bytes = kPairBufferBytes;
  if (info.Length() > 0 && !info[0].IsUndefined()) {
    if (!info[0].IsNumber() || info[0].As<Napi::Number>().Int32Value() < 1) {
      ThrowType(env, "The \"bufferBytes\" argument must be a positive number");
      return Napi::Value();
    }
    bytes = info[0].As<Napi::Number>().Int32Value();
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
    ThrowErrno(env, errno, "socketpair");
    return Napi::Value();
  }
  for (int fd : pair) {
    for (int option : {SO_SNDBUF, SO_RCVBUF}) {
      if (setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof bytes) < 0) {
        const int err = errno;
        close(pair[0]);
        close(pair[1]);
        ThrowErrno(env, err, "setsockopt");
        return Napi::Value();
      }
    }
  }
  Napi::Array result = Napi::Array::New(env, 2);
  result.Set(0u, Napi::Number::New(env, pair[0]));
  result.Set(1u, Napi::Number::New(env, pair[1]));
  if (env.IsExceptionPending()) {
    close(pair[0]);
    close(pair[1]);
    return Napi::Value();
  }
  return result;
}

Napi::Value SocketBufferSizes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  int send = 0, receive = 0;
  socklen_t length = sizeof send;
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send, &length) < 0) {
    ThrowErrno(env, errno, "getsockopt");
    return Napi::Value();
  }
  length = sizeof receive;
  if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive, &length) < 0) {
    ThrowErrno(env, errno, "getsockopt");
    return Napi::Value();
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("send", Napi::Number::New(env, send));
  result.Set("receive", Napi::Number::New(env, receive));
  return result;
}

Napi::Value Shutdown(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  std::string how;
  if (!ArgFd(info, 0, &fd) || !ArgString(info, 1, "how", &how)) return Napi::Value();
  int mode;
  if (how == "read") {
    mode = SHUT_RD;
  } else if (how == "write") {
    mode = SHUT_WR;
  } else if (how == "both") {
    mode = SHUT_RDWR;
  } else {
    ThrowType(env, "The \"how\" argument must be 'read', 'write' or 'both'");
    return Napi::Value();
  }
  if (shutdown(fd, mode) < 0) {
    ThrowErrno(env, errno, "shutdown");
    return Napi::Value();
  }
  return env.Undefined();
}

// SO_PASSRIGHTS (Linux 6.16, socket(7)): off, a Unix socket refuses SCM_RIGHTS and the sender's
// sendmsg fails with EPERM, so no peer descriptor is ever queued on it; connections accepted from a
// listener take the listener's setting at connect(). Older headers lack the constant.
#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif

// true when set; false when this kernel does not know the option (ENOPROTOOPT).
Napi::Value SetPassRights(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  bool allow;
  if (!ArgFd(info, 0, &fd) || !ArgBool(info, 1, "allow", &allow)) return Napi::Value();
  const int value = allow ? 1 : 0;
  if (setsockopt(fd, SOL_SOCKET, SO_PASSRIGHTS, &value, sizeof value) < 0) {
    if (errno == ENOPROTOOPT) return Napi::Boolean::New(env, false);
    ThrowErrno(env, errno, "setsockopt");
    return Napi::Value();
  }
  return Napi::Boolean::New(env, true);
}

Napi::Value ListenUnix(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path;
  int64_t backlog;
  sockaddr_un address;
  socklen_t length;
  if (!ArgString(info, 0, "path", &path) || !ArgInt(info, 1, "backlog", 0, INT_MAX, &backlog) ||
      !UnixAddress(env, path, false, "bind", &address, &length)) {
    return Napi::Value();
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ThrowErrno(env, errno, "socket");
    return Napi::Value();
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) < 0) {
    CloseKeepingErrno(fd);
    ThrowErrno(env, errno, "bind", &path);
    return Napi::Value();
  }
  if (listen(fd, static_cast<int>(backlog)) < 0) {
    CloseKeepingErrno(fd);
    ThrowErrno(env, errno, "listen", &path);
    return Napi::Value();
  }
  return Napi::Number::New(env, fd);
}

Napi::Value Accept(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  int connection;
  // ECONNABORTED: that peer gave up while queued; the next one may be waiting (accept(2)).
  do {
    connection = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  } while (connection < 0 && (errno == EINTR || errno == ECONNABORTED));
  if (connection < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Napi::Number::New(env, -1);
    ThrowErrno(env, errno, "accept4");
    return Napi::Value();
  }
  return Napi::Number::New(env, connection);
}

// Up to `max` queued connections at once, each with its SO_PEERCRED, in one call: under a flood the
// accept queue is emptied in microseconds per connection, so a connection behind thousands (the
// agent's) is reached at once and can be served first (src/broker/accept-order.ts). Returns an
// Int32Array of fd, pid, uid, gid per connection (pid -errno and uid, gid -1 when SO_PEERCRED
// failed). A failing accept4 ends the batch; it throws only when nothing was accepted (the next call
// meets the same error then), so the caller's back-off sees resource errors as with accept().
Napi::Value AcceptBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  int64_t max;
  if (!ArgFd(info, 0, &fd) || !ArgInt(info, 1, "max", 1, 65536, &max)) return Napi::Value();
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(max) * 4);
  int failure = 0;
  for (int64_t i = 0; i < max; i++) {
    int connection;
    do {
      connection = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    } while (connection < 0 && (errno == EINTR || errno == ECONNABORTED));
    if (connection < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) failure = errno;
      break;
    }
    ucred credentials{};
    socklen_t length = sizeof credentials;
    if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &length) < 0) {
      out.insert(out.end(), {connection, -errno, -1, -1});
    } else {
      out.insert(out.end(), {connection, credentials.pid, static_cast<int32_t>(credentials.uid), static_cast<int32_t>(credentials.gid)});
    }
  }
  if (out.empty() && failure != 0) {
    ThrowErrno(env, failure, "accept4");
    return Napi::Value();
  }
  Napi::Int32Array result = Napi::Int32Array::New(env, out.size());
  if (!out.empty()) std::memcpy(result.Data(), out.data(), out.size() * sizeof(int32_t));
  return result;
}

Napi::Value ConnectUnix(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path;
  sockaddr_un address;
  socklen_t length;
  bool passCredentials = false;
  if (!ArgString(info, 0, "path", &path) || !UnixAddress(env, path, false, "connect", &address, &length)) {
    return Napi::Value();
  }
  if (info.Length() > 1 && !info[1].IsUndefined() && !ArgBool(info, 1, "passCredentials", &passCredentials)) return Napi::Value();
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ThrowErrno(env, errno, "socket");
    return Napi::Value();
  }
  // Set before connect, so even the first bytes the listener's side sends on accept carry the kernel's
  // record of their sender (unix(7) SO_PASSCRED: attached to each message sent while it is set).
  const int one = 1;
  if (passCredentials && setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0) {
    CloseKeepingErrno(fd);
    ThrowErrno(env, errno, "setsockopt SO_PASSCRED");
    return Napi::Value();
  }
  // A Unix stream connect completes at once or fails; EAGAIN means the listener's backlog is
  // full (unix(7)), reported as is so the caller can retry.
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), length) < 0) {
    CloseKeepingErrno(fd);
    ThrowErrno(env, errno, "connect", &path);
    return Napi::Value();
  }
  return Napi::Number::New(env, fd);
}

// sd_notify(3) by hand: one datagram, no library. Non-blocking, so a stalled manager makes this
// throw EAGAIN instead of stalling our event loop.
Napi::Value SdNotify(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path, state;
  sockaddr_un address;
  socklen_t length;
  if (!ArgString(info, 0, "socketPath", &path) || !ArgString(info, 1, "state", &state) ||
      !UnixAddress(env, path, true, "sendto", &address, &length)) {
    return Napi::Value();
  }
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ThrowErrno(env, errno, "socket");
    return Napi::Value();
  }
  ssize_t sent;
  do {
    sent = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                  reinterpret_cast<sockaddr*>(&address), length);
  } while (sent < 0 && errno == EINTR);
  const int err = errno;
  close(fd);
  if (sent < 0) {
    ThrowErrno(env, err, "sendto", &path);
    return Napi::Value();
  }
  return env.Undefined();
}

}  // namespace

void InitSockets(Napi::Env env, Napi::Object exports) {
  exports.Set("socketpair", Napi::Function::New(env, Socketpair, "socketpair"));
  exports.Set("socketBufferSizes", Napi::Function::New(env, SocketBufferSizes, "socketBufferSizes"));
  exports.Set("shutdown", Napi::Function::New(env, Shutdown, "shutdown"));
  exports.Set("setPassRights", Napi::Function::New(env, SetPassRights, "setPassRights"));
  exports.Set("listenUnix", Napi::Function::New(env, ListenUnix, "listenUnix"));
  exports.Set("accept", Napi::Function::New(env, Accept, "accept"));
  exports.Set("acceptBatch", Napi::Function::New(env, AcceptBatch, "acceptBatch"));
  exports.Set("connectUnix", Napi::Function::New(env, ConnectUnix, "connectUnix"));
  exports.Set("sdNotify", Napi::Function::New(env, SdNotify, "sdNotify"));
}

}  // namespace opencode_pty
