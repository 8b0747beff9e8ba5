// The client's connection during the data phase: frames out one at a time (a CREDIT ahead of an
// OUTPUT not yet started), bytes in to the decoder, input credit granted back, and the write timeout.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "bytes.h"
#include "helper.h"

// Bytes the client's socket may hold unread before the terminal is left unread: small, so what is
// in flight when the user presses ^C stays small too. Never below the point where the kernel reports
// the socket writable again (unix_writable: a quarter of SO_SNDBUF), or poll would spin.
enum { OUTQ_BOUND = 64 * 1024 };

void client_fault(struct session *s, struct client *c, int reason, uint16_t code, const char *fmt, ...) {
  struct ending *e = s->keep ? &c->fault : &s->end;
  if (e->reason) return;
  e->reason = reason;
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->text, sizeof e->text, fmt, ap);
  va_end(ap);
}

void client_begin(struct client *c) {
  int sndbuf = 0;
  socklen_t size = sizeof sndbuf;
  getsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &size);
  c->outq_limit = sndbuf / 4 - 1 > OUTQ_BOUND ? sndbuf / 4 - 1 : OUTQ_BOUND;
  c->send_credit = INITIAL_WINDOW;
  c->recv_remaining = INITIAL_WINDOW;
}

int client_outq(const struct client *c) {
  int n = 0;
  return ioctl(c->fd, SIOCOUTQ, &n) < 0 ? 0 : n;
}

// Input bytes are done with (written to the terminal, or dropped): grant them back in batches of a
// quarter window, as the worker's relay did (src/protocol/credit.ts ReceiveWindow.consume).
void consume_input(struct client *c, size_t bytes) {
  c->ungranted += (uint32_t)bytes;
  if (c->ungranted < INITIAL_WINDOW / 4) return;
  c->credit_owed += c->ungranted;
  c->recv_remaining += c->ungranted;
  c->ungranted = 0;
}

// Sends what is pending, a frame once started always finished first; a CREDIT goes ahead of an
// OUTPUT frame not yet started. *blocked: the kernel took less than offered. -1: the client is gone.
int client_write(struct client *c, bool *blocked) {
  while (c->started_off < c->started_len) {
    ssize_t n = send(c->fd, c->started + c->started_off, c->started_len - c->started_off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c->started_off += (size_t)n;
      c->stall_since = -1;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      *blocked = true;
      return 0;
    }
    return -1;
  }
  for (;;) {
    bool out_started = c->out_off > 0;
    // A kept session's small frames (TRUNCATED, CONTROLLER_CHANGED) go at a frame boundary, whole,
    // before an OUTPUT frame not yet started (a TRUNCATED must precede the bytes it speaks of).
    if (c->notice_off > 0 || (!out_started && c->urgent_off == 0 && c->notice_len > 0)) {
      ssize_t n = send(c->fd, c->notice + c->notice_off, c->notice_len - c->notice_off, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        c->notice_off += (size_t)n;
        c->stall_since = -1;
        if (c->notice_off == c->notice_len) c->notice_off = c->notice_len = 0;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        *blocked = true;
        return 0;
      }
      return -1;
    }
    if (!out_started && c->urgent_len == 0 && c->credit_owed > 0) {
      c->urgent[0] = FRAME_CREDIT;
      put_be32(c->urgent + 1, 4);
      put_be32(c->urgent + HEADER_SIZE, c->credit_owed);
      c->urgent_len = HEADER_SIZE + 4;
      c->urgent_off = 0;
      c->credit_owed = 0;
    }
    bool urgent = c->urgent_off > 0 || (!out_started && c->urgent_len > 0);
    unsigned char *data = urgent ? c->urgent : c->out;
    size_t *off = urgent ? &c->urgent_off : &c->out_off, *len = urgent ? &c->urgent_len : &c->out_len;
    if (*len == 0) return 0;
    // Never the file's O_NONBLOCK flag: every copy of this socket (worker, PID 1) shares it.
    ssize_t n = send(c->fd, data + *off, *len - *off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      *off += (size_t)n;
      c->stall_since = -1;
      if (*off == *len) {
        if (!urgent) c->bytes_out += *len - HEADER_SIZE;
        *off = *len = 0;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      *blocked = true;
      return 0;
    }
    return -1;
  }
}

void client_read(struct session *s, struct client *c) {
  static unsigned char buf[64 * 1024];
  union {
    struct cmsghdr align;
    char space[CMSG_SPACE(sizeof(int))];
  } control;
  struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
  for (;;) {
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
    ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // A failed call leaves msg untouched (msg_controllen still our buffer's size, the buffer never
    // written): it is judged as the error it is, before any control data is looked at.
    if (n < 0) {
      client_fault(s, c, END_CLIENT_GONE, 0, "client connection failed: %s", strerror(errno));
      return;
    }
    if (msg.msg_controllen > 0 || (msg.msg_flags & MSG_CTRUNC)) {
      for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < count; i++) close(((int *)CMSG_DATA(cm))[i]);
      }
      client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: a descriptor may only travel with START");
      return;
    }
    if (n == 0) {
      client_fault(s, c, END_CLIENT_GONE, 0, "client closed the connection");
      return;
    }
    decode(s, c, buf, (size_t)n);
    return;
  }
}

// The client may flow-fail only when output waits and it has credit for it: withholding credit is
// never an error (docs/protocol.md "Flow control").
void check_stall(struct session *s, struct client *c, bool waiting) {
  if (!waiting) {
    c->stall_since = -1;
    return;
  }
  int64_t now = now_ms();
  int queued = client_outq(c);
  if (c->stall_since < 0 || queued < c->stall_outq) {
    c->stall_since = now; // the client read something: the clock starts again
    c->stall_outq = queued;
    return;
  }
  if (now - c->stall_since < c->write_timeout_ms) return;
  bool more = s->keep ? keep_behind(s, c) : terminal_readable(s);
  if (c->out_len > 0 || (c->send_credit > 0 && more)) {
    client_fault(s, c, END_FLOW, ERR_FLOW, "client did not read its output within the write timeout");
    return;
  }
  c->stall_since = now;
}
