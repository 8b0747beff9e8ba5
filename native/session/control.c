// The helper's end of the control channel: ENV, GO (with STARTED), TERMINATE and KILL from the
// worker; HELLO, LOG, PID, STOP, FIGURES and the one END report to it. The worker treats everything
// here as untrusted; the helper keeps it bounded.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bytes.h"
#include "helper.h"

// All of len bytes out (POLLOUT) or in (POLLIN), blocking in effect without touching the socket's
// flags: messages are small and the worker always reads, and it sends every message whole (GO's
// STARTED with ENV, into an empty buffer), so this waits for nothing in practice. -1 when the worker
// is gone first.
int transfer_all(int fd, unsigned char *p, size_t len, short direction) {
  while (len > 0) {
    ssize_t n = direction == POLLOUT ? send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL) : recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n, len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd q = {.fd = fd, .events = direction};
      if (poll(&q, 1, -1) < 0 && errno != EINTR) return -1;
      continue;
    }
    return -1;
  }
  return 0;
}

// -1 when the worker is gone: it will not act on anything sent, so the link counts as gone.
int control_send_message(struct link *link, uint8_t type, const unsigned char *payload, size_t len) {
  unsigned char header[CONTROL_HEADER_SIZE] = {type};
  put_be32(header + 1, (uint32_t)len);
  if (link->ended) return -1;
  if (link->fd < 0 || transfer_all(link->fd, header, sizeof header, POLLOUT) < 0 ||
      (len > 0 && transfer_all(link->fd, (unsigned char *)payload, len, POLLOUT) < 0)) { // sending only reads through it
    link->gone = true;
    return -1;
  }
  return 0;
}

// Cuts at a UTF-8 character boundary so the worker's strict decoding never sees a torn character.
size_t utf8_cut(const char *text, size_t max) {
  size_t len = strlen(text);
  if (len <= max) return len;
  while (max > 0 && ((unsigned char)text[max] & 0xc0) == 0x80) max--;
  return max;
}

// Diagnostics travel to the worker, which writes them to the journal with the session's unit name;
// a session gets MAX_LOGS of them, so a misbehaving program cannot flood the journal through us.
void say(struct link *link, int priority, const char *fmt, ...) {
  if (link->logs_sent >= MAX_LOGS) return;
  char text[MAX_LOG_TEXT + 1];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (++link->logs_sent == MAX_LOGS) snprintf(text, sizeof text, "further diagnostics of this session are dropped");
  unsigned char payload[1 + MAX_LOG_TEXT];
  payload[0] = (unsigned char)priority;
  size_t len = utf8_cut(text, MAX_LOG_TEXT);
  memcpy(payload + 1, text, len);
  if (link->fd >= 0) control_send_message(link, CONTROL_LOG, payload, 1 + len);
  else fprintf(stderr, TAG "%s\n", text); // /dev/null by then, unless fd 2 could not be taken
}

// The helper's dialect of this channel, first of all: a worker of a later release tells by it what
// this helper sends and does (a helper that sends none speaks dialect 1).
void control_send_hello(struct link *link) {
  unsigned char payload[HELLO_SIZE];
  put_be16(payload, CONTROL_DIALECT);
  control_send_message(link, CONTROL_HELLO, payload, sizeof payload);
}

void control_send_stop(struct link *link) {
  control_send_message(link, CONTROL_STOP, NULL, 0);
}

// The session's figures, read while this process keeps its cgroup alive (figures.c), for the client's
// end record: the worker's last frame need not wait for systemd's.
_Static_assert(FIGURES_SIZE == 8 * FIGURE_COUNT, "one u64 a figure");

static void control_send_figures(struct link *link) {
  uint64_t figures[FIGURE_COUNT];
  read_figures(figures);
  unsigned char payload[FIGURES_SIZE];
  for (int i = 0; i < FIGURE_COUNT; i++) put_be64(payload + 8 * i, figures[i]);
  control_send_message(link, CONTROL_FIGURES, payload, sizeof payload);
}

// The one END: how the data phase ended, what crossed (OUTPUT payload bytes the client gets, the
// remainder's included), and the rest of the frame in progress (at
// most one frame), which the worker writes before its last frame so the client never sees it torn.
void control_send_end(struct session *s, const struct client *c) {
  const unsigned char *rest = NULL;
  size_t rest_len = 0;
  uint64_t bytes_out = c->bytes_out;
  if (c->started_off > 0 && c->started_off < c->started_len) rest = c->started + c->started_off, rest_len = c->started_len - c->started_off;
  else if (c->urgent_off > 0 && c->urgent_off < c->urgent_len) rest = c->urgent + c->urgent_off, rest_len = c->urgent_len - c->urgent_off;
  else if (c->out_off > 0 && c->out_off < c->out_len) {
    rest = c->out + c->out_off, rest_len = c->out_len - c->out_off;
    bytes_out += c->out_len - HEADER_SIZE; // the worker sends the rest: the client gets the whole frame
  }
  control_send_report(s, c->bytes_in, bytes_out, rest, rest_len);
}

// END itself, after FIGURES (a kept session's has no remainder: each connection's went in its DETACHED).
void control_send_report(struct session *s, uint64_t bytes_in, uint64_t bytes_out, const unsigned char *rest, size_t rest_len) {
  if (s->worker.ended) return;
  control_send_figures(&s->worker);
  static unsigned char payload[MAX_CONTROL_PAYLOAD];
  size_t text_len = utf8_cut(s->end.text, MAX_REPORT_TEXT);
  payload[0] = (unsigned char)s->end.reason;
  put_be16(payload + 1, s->end.code);
  put_be64(payload + 3, bytes_in);
  put_be64(payload + 11, bytes_out);
  put_be32(payload + 19, (uint32_t)rest_len);
  if (rest_len) memcpy(payload + END_FIXED_SIZE, rest, rest_len);
  memcpy(payload + END_FIXED_SIZE + rest_len, s->end.text, text_len);
  control_send_message(&s->worker, CONTROL_END, payload, END_FIXED_SIZE + rest_len + text_len);
  s->worker.ended = true;
}

// The program's pid, sent before anything is written to the client: the worker takes "no PID" after
// the unit's end to mean that nothing was, so the client's write side was never the helper's.
int control_send_pid(struct link *link, pid_t pid) {
  unsigned char payload[4];
  put_be32(payload, (uint32_t)pid);
  return control_send_message(link, CONTROL_PID, payload, sizeof payload);
}

// The unit STARTED names (version 1: after mainPid; version 2: after both pids, with its u16 length),
// kept when it is a plain unit name: the helper signals no cgroup but that unit's.
static void keep_unit_name(struct session *s, const struct client *c, size_t len) {
  const unsigned char *p = c->started + HEADER_SIZE;
  size_t payload = len - HEADER_SIZE, at = c->version >= 2 ? 10 : 4, name_len;
  if (c->version >= 2) name_len = payload >= 10 ? get_be16(p + 8) : 0;
  else name_len = payload - 4;
  s->unit[0] = '\0';
  if (name_len == 0 || name_len > MAX_UNIT_NAME || at + name_len > payload) return;
  for (size_t i = 0; i < name_len; i++)
    if (p[at + i] < 0x21 || p[at + i] > 0x7e || p[at + i] == '/') return;
  memcpy(s->unit, p + at, name_len);
  s->unit[name_len] = '\0';
}

// GO's payload: the STARTED frame the worker encoded for this session (docs/protocol.md), written
// before anything else. The helper knows the two pids it names: its own (the unit's main process) and
// the program's. Writing it here rather than in the worker saves the worker's turn between the fork
// and the first output: the PID message out, STARTED and GO back (two wake-ups of two processes).
// -1 when it is not a STARTED of this session's version.
static int take_started(struct session *s, struct client *c, uint32_t len) {
  size_t pids = c->version >= 2 ? 8 : 4;
  if (len < HEADER_SIZE + pids + 1 || len > sizeof c->started) return -1;
  if (transfer_all(s->worker.fd, c->started, len, POLLIN) < 0) return -1;
  if (c->started[0] != FRAME_STARTED || get_be32(c->started + 1) != len - HEADER_SIZE) return -1;
  // Version 1: mainPid, unit. Version 2: programPid, mainPid, the rest.
  if (c->version >= 2) {
    put_be32(c->started + HEADER_SIZE, (uint32_t)s->child.pid);
    put_be32(c->started + HEADER_SIZE + 4, (uint32_t)getpid());
  } else {
    put_be32(c->started + HEADER_SIZE, (uint32_t)getpid());
  }
  keep_unit_name(s, c, len);
  c->started_len = len;
  c->started_off = 0;
  return 0;
}

// One read of the channel, never past the message being read (`want` bytes at most), so a descriptor
// (SCM_RIGHTS) is known to belong to the message whose first byte it came with. A descriptor anywhere
// else, or more than one, is the worker breaking the channel's rules: every one that came is closed.
static ssize_t receive(struct link *link, size_t want, bool *fault) {
  union {
    struct cmsghdr align;
    char space[CMSG_SPACE(4 * sizeof(int))];
  } control;
  struct iovec iov = {.iov_base = link->in + link->got, .iov_len = want};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
  ssize_t n = recvmsg(link->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  if (msg.msg_flags & MSG_CTRUNC) *fault = true; // the kernel closed those that did not fit
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
      if (count == 1 && link->got == 0 && link->passed_fd < 0 && !*fault) link->passed_fd = fd;
      else close(fd), *fault = true;
    }
  }
  return n;
}

// One whole message from the worker (its header in link->in, ATTACH's payload after it). false: a
// message the worker never sends, or sends otherwise (the link is then gone).
static bool act_on(struct session *s, struct client *c, uint8_t type, uint32_t len) {
  if (type == CONTROL_GO && !c->go) {
    if (take_started(s, c, len) < 0) return false;
    c->go = true;
    return true;
  }
  if (s->keep && type == CONTROL_ATTACH && len == ATTACH_SIZE) {
    int fd = link_take_fd(&s->worker);
    return fd >= 0 && keep_attach(s, s->worker.in + CONTROL_HEADER_SIZE, fd);
  }
  if (s->keep && type == CONTROL_RENDEZVOUS && len >= 1 && len <= MAX_RENDEZVOUS_CGROUP) {
    // Once, after GO: the session is started; a worker gone from here on leaves it running (keep-rendezvous.c).
    int fd = link_take_fd(&s->worker);
    if (fd < 0 || s->rendezvous >= 0 || !c->go || !keep_rendezvous_cgroup(s, s->worker.in + CONTROL_HEADER_SIZE, len)) {
      if (fd >= 0) close(fd);
      return false;
    }
    s->rendezvous = fd;
    return true;
  }
  if (len != 0) return false;
  if (type == CONTROL_TERMINATE) end_with(s, END_TERMINATED, ERR_SHUTDOWN, "terminated by the supervisor");
  else if (type == CONTROL_KILL) signal_unit_others(s, SIGKILL);
  else if (s->keep && type == CONTROL_QUERY) keep_send_state(s);
  else return false;
  return true;
}

int link_take_fd(struct link *link) {
  int fd = link->passed_fd;
  link->passed_fd = -1;
  return fd;
}

// The payload read with a message from the worker: ATTACH's and RENDEZVOUS's (a kept session's), none else.
static size_t payload_of(const struct session *s, const unsigned char *in) {
  uint32_t len = get_be32(in + 1);
  if (!s->keep) return 0;
  if (in[0] == CONTROL_ATTACH && len == ATTACH_SIZE) return len;
  if (in[0] == CONTROL_RENDEZVOUS && len >= 1 && len <= MAX_RENDEZVOUS_CGROUP) return len;
  return 0;
}

// Reads what the worker sent; the worker gone, or a message it never sends, marks the link gone.
void control_read(struct session *s, struct client *c) {
  struct link *link = &s->worker;
  while (!link->gone) {
    bool fault = false;
    size_t whole = CONTROL_HEADER_SIZE;
    if (link->got >= CONTROL_HEADER_SIZE) whole += payload_of(s, link->in);
    ssize_t n = receive(link, whole - link->got, &fault);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0 || fault) break;
    link->got += (size_t)n;
    // A descriptor comes with ATTACH and RENDEZVOUS only, which a session that is not kept is never sent.
    if (link->got >= 1 && link->passed_fd >= 0 && ((link->in[0] != CONTROL_ATTACH && link->in[0] != CONTROL_RENDEZVOUS) || !s->keep)) break;
    if (link->got < CONTROL_HEADER_SIZE) continue;
    uint32_t len = get_be32(link->in + 1);
    if (link->got < CONTROL_HEADER_SIZE + payload_of(s, link->in)) continue;
    link->got = 0;
    if (!act_on(s, c, link->in[0], len)) break;
  }
  if (link->passed_fd >= 0) close(link_take_fd(link));
  link->gone = true;
}
