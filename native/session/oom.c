// The program's raised OOM score under the workspace profile (docs/security.md "The workspace profile", a memory budget).
//
// The program must be forked inside the helper's Landlock domain: the domain's signal scope lets the
// helper signal only its own domain and those nested in it, and it ends the program in steps (child.c).
// That domain keeps /proc read-only, so the child cannot write its own /proc/self/oom_score_adj; and
// granting the helper's domain a write under /proc would widen the helper's confinement.
// So one small process is forked before the helper enters its domain, and it alone is outside it:
// it closes everything it inherited but one socket to the program's process, reads one byte there
// whose sender's PID the kernel attaches (SCM_CREDENTIALS; a process cannot claim another's PID), writes
// the score to that PID's oom_score_adj, answers one byte and exits. The program's process sends
// that byte before execve, once it is dumpable (its /proc files are root's until then) and holds
// nothing but its terminal; it execs only after the answer. Neither side parses anything else, and
// the helper itself reads nothing of it: it reaps the raiser on its SIGCHLD (child_reap()).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helper.h"

// The raiser: fd 3 is its socket. Its answer: 0, or the errno that kept the score from being written.
static _Noreturn void raiser(int adj) {
  char byte;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(struct ucred))];
  } control;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf};
  ssize_t n;
  while ((n = recvmsg(3, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {}
  if (n != 1) _exit(1); // the program's process ended before asking: nothing to raise
  unsigned char answer = EPROTO;
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS && cmsg->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
    struct ucred cred;
    memcpy(&cred, CMSG_DATA(cmsg), sizeof cred);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)cred.pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    answer = fd < 0 || dprintf(fd, "%d\n", adj) < 0 ? (unsigned char)errno : 0;
    if (fd >= 0) close(fd);
  }
  while (send(3, &answer, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {}
  _exit(0);
}

int oom_raiser_start(int adj, pid_t *pid) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  // Set before either end can send, so the kernel attaches the sender's credentials to every message.
  int on = 1;
  if (setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0) goto fail;
  *pid = fork();
  if (*pid < 0) goto fail;
  if (*pid == 0) {
    // It inherited the helper's descriptors (the client's connection among them): only its socket stays.
    // Non-dumpable as the helper, so no process of the user can take them meanwhile.
    if (dup2(sv[0], 3) < 0) _exit(1);
    close_from(4);
    // 0-2 too: the START directory, the client's connection (the unit's stdout) and root's channel.
    for (int fd = 0; fd < 3; fd++) close(fd);
    raiser(adj);
  }
  close(sv[0]);
  return sv[1];
fail:
  close(sv[0]);
  close(sv[1]);
  return -1;
}

// In the program's process, holding only its terminal (fds 0-2) and the socket: dumpable, so the
// raiser (the same user) may open its oom_score_adj, asks, and waits for the answer.
void oom_raise_by(int fd) {
  if (prctl(PR_SET_DUMPABLE, 1) < 0) _exit(126);
  unsigned char answer = 0;
  ssize_t n;
  while ((n = send(fd, "r", 1, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
  if (n == 1)
    while ((n = recv(fd, &answer, 1, 0)) < 0 && errno == EINTR) {}
  if (n != 1 || answer != 0) {
    dprintf(2, TAG "cannot raise the program's OOM score: %s\n", n == 1 ? strerror(answer) : "the raiser is gone");
    _exit(126);
  }
  close(fd);
}
