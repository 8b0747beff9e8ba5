// A warm helper (--warm, dialect 5): its unit is started before any START, and it waits on its control
// channel for CLAIM, answers CLAIMED, then takes LAUNCH: the arguments a fresh unit's helper gets in its
// argv, the START directory and the client connection. Before LAUNCH nothing is opened (no terminal: a
// terminal's slave is reachable by name by every process of the user); the channel's end, or anything
// else on it, ends the helper at once. docs/architecture.md "Warm units".
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bytes.h"
#include "helper.h"

// Exactly `len` bytes, blocking. Descriptors may come with the first read only, and only when `fds` is
// given (at most 2, kept in fds[], their count in *nfds); any other descriptor, EOF or an error: -1.
static int read_exact(int fd, unsigned char *p, size_t len, int *fds, size_t *nfds) {
  size_t got = 0;
  bool fault = false;
  while (got < len && !fault) {
    union {
      struct cmsghdr align;
      char space[CMSG_SPACE(2 * sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = p + got, .iov_len = len - got};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
    ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd q = {.fd = fd, .events = POLLIN};
      if (poll(&q, 1, -1) < 0 && errno != EINTR) return -1;
      continue;
    }
    if (n <= 0) return -1;
    if (msg.msg_flags & MSG_CTRUNC) fault = true;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; i++) {
        int passed;
        memcpy(&passed, CMSG_DATA(cm) + i * sizeof(int), sizeof passed);
        if (fds && got == 0 && *nfds < 2) fds[(*nfds)++] = passed;
        else close(passed), fault = true;
      }
    }
    got += (size_t)n;
  }
  return fault ? -1 : 0;
}

// The LAUNCH payload as an argv: argv0 first, then each "ARG\0" of it, then NULL. NULL when it is not
// that (empty, not NUL-terminated, too many arguments).
static char **launch_argv(char *argv0, unsigned char *payload, size_t len, int *argc) {
  if (len == 0 || payload[len - 1] != '\0') return NULL;
  size_t count = 0;
  for (size_t i = 0; i < len; i++) count += payload[i] == '\0';
  if (count > MAX_LAUNCH_ARGS) return NULL;
  char **argv = calloc(count + 2, sizeof *argv);
  if (!argv) return NULL;
  argv[0] = argv0;
  size_t at = 0;
  for (size_t k = 1; k <= count; k++) {
    argv[k] = (char *)payload + at;
    at += strlen(argv[k]) + 1;
  }
  *argc = (int)count + 1;
  return argv;
}

// Waits for CLAIM, answers CLAIMED, takes LAUNCH: returns the new argv (and its count in *argc), the START
// directory in *cwd and the client connection in *client. Never returns on anything else: exits, quietly
// before CLAIMED (the worker takes a silent helper as one to stop and starts a fresh unit), with 1 after.
char **warm_wait(struct session *s, char *argv0, int *argc, int *cwd, int *client) {
  int fd = s->worker.fd;
  unsigned char header[CONTROL_HEADER_SIZE];
  if (read_exact(fd, header, sizeof header, NULL, NULL) < 0 || header[0] != CONTROL_CLAIM || get_be32(header + 1) != 0) exit(0);
  if (control_send_message(&s->worker, CONTROL_CLAIMED, NULL, 0) < 0) exit(0);
  int fds[2] = {-1, -1};
  size_t nfds = 0;
  if (read_exact(fd, header, sizeof header, fds, &nfds) < 0 || nfds != 2 || header[0] != CONTROL_LAUNCH) exit(1);
  uint32_t len = get_be32(header + 1);
  if (len == 0 || len > MAX_LAUNCH_PAYLOAD) exit(1);
  unsigned char *payload = malloc(len);
  if (!payload || read_exact(fd, payload, len, NULL, NULL) < 0) exit(1);
  char **argv = launch_argv(argv0, payload, len, argc);
  if (!argv) exit(1);
  *cwd = fds[0];
  *client = fds[1];
  return argv; // the payload stays allocated: argv points into it for the helper's whole life
}
