// A kept session outlives its worker (dialect 4, docs/architecture.md "Kept sessions across the
// supervisor"): with RENDEZVOUS's listening socket, the end of the worker's channel no longer ends the
// session. Every connection is let go (nobody in root knows them any more, and only root may write
// their last frame), the program runs on into the ring, and the next control channel is the first peer
// with uid 0 accepted on that socket: it is greeted with HELLO, as a channel at start is.
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "keep.h"

// Debian 12's headers predate SO_PEERPIDFD (Linux 6.5, include/uapi/asm-generic/socket.h).
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

// The worker is gone: its end of the channel closed, every connection shut for every holder (PID 1
// keeps a copy of the START connection as the unit's stdout, so closing ours would not end it), each
// conn number free again. Their clients see the connection end and ATTACH again from their offset.
void keep_orphaned(struct session *s) {
  struct keep *k = s->keep;
  if (s->worker.fd >= 0) close(s->worker.fd);
  s->worker.fd = -1;
  if (s->worker.passed_fd >= 0) close(link_take_fd(&s->worker));
  s->worker.got = 0;
  for (int i = 0; i < MAX_CONNS; i++) {
    struct client *c = k->conns[i];
    if (!c) continue;
    shutdown(c->fd, SHUT_RDWR);
    conn_detach(s, c, DETACH_CLIENT_GONE, 0, ""); // told to nobody: the link is gone
  }
  k->controller = NULL;
  memset(k->used, 0, sizeof k->used);
  k->used[0] |= 1; // conn 0 is the START's, never given again
  // Peers already queued are judged at accept as any other (keep_accept): the old worker's own is dead,
  // a peer outside the supervisor's cgroup is refused; the next worker may well have queued before this
  // end of its predecessor's channel was seen, and is taken (letting the queue go stopped its session).
}

// RENDEZVOUS's payload: the cgroup of root's supervisor (its path under the cgroup root), where the next
// channel's peer must be. An absolute path of at most MAX_RENDEZVOUS_CGROUP bytes, no NUL, no "." or ".."
// component; false for anything else (the worker broke the dialect).
bool keep_rendezvous_cgroup(struct session *s, const unsigned char *path, size_t len) {
  if (len == 0 || len > MAX_RENDEZVOUS_CGROUP || path[0] != '/' || memchr(path, '\0', len)) return false;
  for (size_t i = 0; i < len; i++) {
    if (path[i] != '/') continue;
    size_t n = 0;
    while (i + 1 + n < len && path[i + 1 + n] != '/') n++;
    if ((n == 1 && path[i + 1] == '.') || (n == 2 && path[i + 1] == '.' && path[i + 2] == '.')) return false;
  }
  memcpy(s->rendezvous_cgroup, path, len);
  s->rendezvous_cgroup[len] = '\0';
  return true;
}

// Whether `pid` is listed in the cgroup's cgroup.procs (the unified hierarchy, at /sys/fs/cgroup or, in
// systemd's hybrid layout, /sys/fs/cgroup/unified). Read there, not in /proc/<pid>/cgroup: the session's
// unit hides other accounts' processes (ProtectProc=invisible), root's among them, while /sys/fs/cgroup
// stays readable (ProtectControlGroups= makes it read-only).
static bool cgroup_holds(const char *cgroup, pid_t pid) {
  static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
  const char *path = strcmp(cgroup, "/") == 0 ? "" : cgroup;
  for (size_t r = 0; r < sizeof roots / sizeof *roots; r++) {
    char procs[sizeof "/sys/fs/cgroup/unified" + MAX_RENDEZVOUS_CGROUP + sizeof "/cgroup.procs"];
    snprintf(procs, sizeof procs, "%s%s/cgroup.procs", roots[r], path);
    FILE *f = fopen(procs, "re");
    if (!f) continue;
    bool found = false;
    char line[32];
    while (!found && fgets(line, sizeof line, f)) found = strtol(line, NULL, 10) == (long)pid;
    fclose(f);
    return found;
  }
  return false;
}

// Whether the process that connected is alive: its pidfd (SO_PEERPIDFD, Linux 6.5) is readable once it
// exited. Asked after cgroup_holds, so a pid freed by the peer and taken by a process of that cgroup does
// not pass. Without SO_PEERPIDFD the pid alone is all there is (docs/security.md).
static bool peer_alive(int fd) {
  int pidfd = -1;
  socklen_t len = sizeof pidfd;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0 || len != sizeof pidfd || pidfd < 0) return errno == ENOPROTOOPT;
  struct pollfd p = {.fd = pidfd, .events = POLLIN};
  int ready = poll(&p, 1, 0);
  close(pidfd);
  return ready == 0;
}

// A peer on the rendezvous socket: root's next worker, or nobody. Root's directory holds the socket, but
// any uid-0 process reaches it, capabilities or not; the supervisor lets root see or stop a session only
// with CAP_SYS_PTRACE. So the peer must also be a process of the supervisor's own cgroup (RENDEZVOUS's
// payload), alive as its pid was looked up. The channel starts as at start: HELLO first, then what was
// refused since, then the program's end once more if it came meanwhile (the new worker learns it here).
void keep_accept(struct session *s) {
  int fd = accept4(s->rendezvous, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return; // EAGAIN (the listener is non-blocking), or a peer gone before we took it
  struct ucred cred = {.pid = 0, .uid = (uid_t)-1};
  socklen_t len = sizeof cred;
  // A pid of 0 is a peer outside our PID namespace, and cgroup.procs lists such tasks as 0 too: refused.
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred || cred.uid != 0 || cred.pid <= 0 || !cgroup_holds(s->rendezvous_cgroup, cred.pid) || !peer_alive(fd)) {
    s->refused++;
    snprintf(s->refusal, sizeof s->refusal, "pid %ld uid %ld", (long)cred.pid, (long)cred.uid);
    close(fd);
    return;
  }
  struct link *link = &s->worker;
  link->fd = fd;
  link->gone = false;
  link->ended = false;
  link->got = 0;
  link->passed_fd = -1;
  link->logs_sent = 0; // each channel has its own budget of diagnostics, as a worker's at start
  s->keep->program_ended_sent = false;
  control_send_hello(link);
  if (s->refused > 0)
    say(link, 4, "%u peer(s) refused at the rendezvous since the last channel: not root, or not a process of the supervisor's cgroup (the last: %s)", s->refused, s->refusal);
  s->refused = 0;
}
