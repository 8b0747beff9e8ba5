// Who is on the other end: SO_PEERCRED, SO_PEERPIDFD, and what a pidfd tells (pid, cgroup, liveness).
#include "addon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

// Debian 12's headers predate SO_PEERPIDFD (Linux 6.5, include/uapi/asm-generic/socket.h).
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

namespace opencode_pty {

namespace {

// Generous bounds for small /proc files; a cgroup path is at most a few KiB.
constexpr size_t kProcFileLimit = 64 * 1024;

// Reads a /proc file whole (up to the limit); false with errno set on failure.
bool ReadProcFile(const std::string& path, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[4096];
  out->clear();
  while (out->size() < kProcFileLimit) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      close(fd);
      errno = err;
      return false;
    }
    if (got == 0) break;
    out->append(buffer, static_cast<size_t>(got));
  }
  close(fd);
  return true;
}

// The rest of the first line starting with `prefix`, or false.
bool FindLine(const std::string& text, const char* prefix, std::string* rest) {
  const size_t prefixLength = std::strlen(prefix);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (text.compare(start, prefixLength, prefix) == 0) {
      *rest = text.substr(start + prefixLength, end - start - prefixLength);
      return true;
    }
    start = end + 1;
  }
  return false;
}

// The "Pid:" line of the pidfd's fdinfo (kernel/pid.c pidfd_show_fdinfo): -1 once the process is
// reaped, 0 when it lives outside our pid namespace. Either way we cannot name it: ESRCH.
bool PidOfPidfd(Napi::Env env, int pidfd, pid_t* out) {
  std::string text, value;
  if (!ReadProcFile("/proc/self/fdinfo/" + std::to_string(pidfd), &text)) {
    // No fdinfo entry: the descriptor is not open.
    ThrowErrno(env, errno == ENOENT ? EBADF : errno, "fdinfo");
    return false;
  }
  if (!FindLine(text, "Pid:", &value)) {
    ThrowErrno(env, EINVAL, "fdinfo");  // open, but not a pidfd
    return false;
  }
  char* end = nullptr;
  const long pid = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || pid > INT_MAX) {
    ThrowErrno(env, EINVAL, "fdinfo");
    return false;
  }
  if (pid <= 0) {
    ThrowErrno(env, ESRCH, "fdinfo");
    return false;
  }
  *out = static_cast<pid_t>(pid);
  return true;
}

int PidfdSignal(int pidfd, int signal) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

Napi::Value PeerCredentials(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) < 0) {
    ThrowErrno(env, errno, "getsockopt");
    return Napi::Value();
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("pid", Napi::Number::New(env, credentials.pid));
  result.Set("uid", Napi::Number::New(env, credentials.uid));
  result.Set("gid", Napi::Number::New(env, credentials.gid));
  return result;
}

Napi::Value PeerPidfd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  int pidfd = -1;
  socklen_t length = sizeof pidfd;
  // The kernel makes this pidfd close-on-exec itself (pidfd_prepare).
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) < 0) {
    ThrowErrno(env, errno, "getsockopt");
    return Napi::Value();
  }
  return Napi::Number::New(env, pidfd);
}

Napi::Value PidfdOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t pid;
  if (!ArgInt(info, 0, "pid", 1, INT_MAX, &pid)) return Napi::Value();
  // Without PIDFD_NONBLOCK the pidfd is close-on-exec by default (pidfd_open(2)).
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (pidfd < 0) {
    ThrowErrno(env, errno, "pidfd_open");
    return Napi::Value();
  }
  return Napi::Number::New(env, pidfd);
}

Napi::Value PidfdPid(const Napi::CallbackInfo& info) {
  int pidfd;
  pid_t pid;
  if (!ArgFd(info, 0, &pidfd) || !PidOfPidfd(info.Env(), pidfd, &pid)) return Napi::Value();
  return Napi::Number::New(info.Env(), pid);
}

// /proc/<pid>/cgroup read by pid can race with the pid's reuse; confirming afterwards that the
// pidfd's own process is alive under the same pid closes that race (pidfd_send_signal(2), signal 0).
// After reading /proc/<pid>: the pidfd's process is alive and still has `pid`, so what was read is
// not a successor's (throws ESRCH otherwise). EPERM still proves the process exists.
bool StillAlive(Napi::Env env, int pidfd, pid_t pid) {
  if (PidfdSignal(pidfd, 0) < 0 && errno != EPERM) {
    ThrowErrno(env, errno, "pidfd_send_signal");
    return false;
  }
  pid_t again;
  if (!PidOfPidfd(env, pidfd, &again)) return false;
  if (again != pid) {
    ThrowErrno(env, ESRCH, "fdinfo");
    return false;
  }
  return true;
}

Napi::Value PidfdCgroup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int pidfd;
  pid_t pid;
  if (!ArgFd(info, 0, &pidfd) || !PidOfPidfd(env, pidfd, &pid)) return Napi::Value();
  std::string text, path;
  if (!ReadProcFile("/proc/" + std::to_string(pid) + "/cgroup", &text)) {
    // The process went away between fdinfo and /proc.
    ThrowErrno(env, errno == ENOENT ? ESRCH : errno, "read");
    return Napi::Value();
  }
  // Hybrid hosts list v1 hierarchies too; the unified (v2) one is the "0::" line.
  if (!FindLine(text, "0::", &path)) {
    ThrowErrno(env, ENOENT, "read");
    return Napi::Value();
  }
  if (!StillAlive(env, pidfd, pid)) return Napi::Value();
  return Napi::String::New(env, path);
}

// pidfdCgroup plus the start time (field 22 of /proc/<pid>/stat, clock ticks since boot) in one call:
// both read by pid, then confirmed as pidfdCgroup does, so neither can be a successor's. Once per
// accepted connection, so no JavaScript string work on the way.
Napi::Value PidfdIdentity(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int pidfd;
  pid_t pid;
  if (!ArgFd(info, 0, &pidfd) || !PidOfPidfd(env, pidfd, &pid)) return Napi::Value();
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string stat, text, path;
  if (!ReadProcFile(proc + "/stat", &stat) || !ReadProcFile(proc + "/cgroup", &text)) {
    ThrowErrno(env, errno == ENOENT ? ESRCH : errno, "read");
    return Napi::Value();
  }
  // The command name may contain spaces and parentheses: fields are counted after the last ')'.
  const size_t close = stat.rfind(')');
  unsigned long long startTicks = 0;
  if (close == std::string::npos ||
      sscanf(stat.c_str() + close + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &startTicks) != 1) {
    ThrowErrno(env, EINVAL, "read");
    return Napi::Value();
  }
  if (!FindLine(text, "0::", &path)) {
    ThrowErrno(env, ENOENT, "read");
    return Napi::Value();
  }
  if (!StillAlive(env, pidfd, pid)) return Napi::Value();
  Napi::Object result = Napi::Object::New(env);
  result.Set("pid", Napi::Number::New(env, pid));
  result.Set("cgroup", Napi::String::New(env, path));
  result.Set("startTicks", Napi::Number::New(env, static_cast<double>(startTicks)));
  return result;
}

Napi::Value PidfdSendSignal(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int pidfd;
  int64_t signal;
  if (!ArgFd(info, 0, &pidfd) || !ArgInt(info, 1, "signal", 0, 64, &signal)) return Napi::Value();
  if (PidfdSignal(pidfd, static_cast<int>(signal)) < 0) {
    ThrowErrno(env, errno, "pidfd_send_signal");
    return Napi::Value();
  }
  return env.Undefined();
}

}  // namespace

void InitPeer(Napi::Env env, Napi::Object exports) {
  exports.Set("peerCredentials", Napi::Function::New(env, PeerCredentials, "peerCredentials"));
  exports.Set("peerPidfd", Napi::Function::New(env, PeerPidfd, "peerPidfd"));
  exports.Set("pidfdOpen", Napi::Function::New(env, PidfdOpen, "pidfdOpen"));
  exports.Set("pidfdPid", Napi::Function::New(env, PidfdPid, "pidfdPid"));
  exports.Set("pidfdCgroup", Napi::Function::New(env, PidfdCgroup, "pidfdCgroup"));
  exports.Set("pidfdIdentity", Napi::Function::New(env, PidfdIdentity, "pidfdIdentity"));
  exports.Set("pidfdSendSignal", Napi::Function::New(env, PidfdSendSignal, "pidfdSendSignal"));
}

}  // namespace opencode_pty
