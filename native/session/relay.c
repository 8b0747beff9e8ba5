// The data phase: client ⇄ terminal, with credit both ways. The terminal is read only while the
// client has credit and the socket's queue is short (SIOCOUTQ), so a slow client throttles the
// program through the kernel (as systemd's ptyfwd does) and a paused client loses nothing.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "helper.h"

// Bytes the client's socket may hold unread before the terminal is left unread: small, so what is
// in flight when the user presses ^C stays small too. Never below the point where the kernel reports
// the socket writable again (unix_writable: a quarter of SO_SNDBUF), or poll would spin.
enum { OUTQ_BOUND = 64 * 1024 };

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static int outq(void) {
  int n = 0;
  return ioctl(r.client, SIOCOUTQ, &n) < 0 ? 0 : n;
}

static bool master_readable(void) {
  struct pollfd p = {.fd = r.master, .events = POLLIN};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static void handle_signals(void) {
  struct signalfd_siginfo si;
  ssize_t n;
  while ((n = read(r.sigfd, &si, sizeof si)) == (ssize_t)sizeof si || (n < 0 && errno == EINTR)) {
    if (n < 0) continue;
    if (si.ssi_signo == SIGCHLD) reap(false);
    // A hang-up is passed on to the program's process group, as a closing terminal would.
    else if (si.ssi_signo == SIGHUP) hangup_child();
    // SIGTERM, SIGINT, SIGQUIT: caught only so they do not end the helper, which lives on to drain
    // the program's last output and report. A stop signals every process of the unit itself.
  }
}

// One OUTPUT frame from what the terminal has now, within the client's credit: 1 framed, 0 would
// block, -1 nobody holds the terminal any more (Linux reports that as EIO rather than EOF). A read
// of the master returns at most what the line discipline holds (a few KiB): reads go on into the
// same frame while more is there at once, so a flood costs the client one frame per 32 KiB, not per
// read, and a lone keystroke's echo waits for nothing (the next read says EAGAIN at once).
static int read_master(void) {
  size_t want = r.send_credit < MAX_IO_PAYLOAD ? r.send_credit : MAX_IO_PAYLOAD, got = 0;
  while (got < want) {
    ssize_t n = read(r.master, r.out + HEADER_SIZE + got, want - got);
    if (n > 0) {
      got += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (got == 0) { // EIO, reported with the next read if this one brought bytes
      r.master_eof = true;
      return -1;
    }
    break;
  }
  if (got == 0) return 0;
  r.out[0] = FRAME_OUTPUT;
  put_be32(r.out + 1, (uint32_t)got);
  r.out_len = HEADER_SIZE + got;
  r.out_off = 0;
  r.send_credit -= (uint32_t)got;
  return 1;
}

// INPUT waiting in the ring goes to the terminal as far as it takes it; what it took is granted back.
static void write_master(void) {
  while (r.ring_len > 0) {
    size_t first = sizeof r.ring - r.ring_head < r.ring_len ? sizeof r.ring - r.ring_head : r.ring_len;
    ssize_t n = write(r.master, r.ring + r.ring_head, first);
    if (n > 0) {
      r.ring_head = (r.ring_head + (size_t)n) % sizeof r.ring;
      r.ring_len -= (size_t)n;
      consume_input((size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return; // the program is not reading: its input waits here
    // Nobody can read the terminal any more: the input is dropped (still granted back).
    consume_input(r.ring_len);
    r.ring_len = 0;
    r.ring_head = 0;
    return;
  }
}

// Sends what is pending, a frame once started always finished first; a CREDIT goes ahead of an
// OUTPUT frame not yet started. *blocked: the kernel took less than offered. -1: the client is gone.
static int write_client(bool *blocked) {
  while (r.started_off < r.started_len) {
    ssize_t n = send(r.client, r.started + r.started_off, r.started_len - r.started_off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      r.started_off += (size_t)n;
      r.stall_since = -1;
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
    bool out_started = r.out_off > 0;
    if (!out_started && r.urgent_len == 0 && r.credit_owed > 0) {
      r.urgent[0] = FRAME_CREDIT;
      put_be32(r.urgent + 1, 4);
      put_be32(r.urgent + HEADER_SIZE, r.credit_owed);
      r.urgent_len = HEADER_SIZE + 4;
      r.urgent_off = 0;
      r.credit_owed = 0;
    }
    bool urgent = r.urgent_off > 0 || (!out_started && r.urgent_len > 0);
    unsigned char *data = urgent ? r.urgent : r.out;
    size_t *off = urgent ? &r.urgent_off : &r.out_off, *len = urgent ? &r.urgent_len : &r.out_len;
    if (*len == 0) return 0;
    // Never the file's O_NONBLOCK flag: every copy of this socket (worker, PID 1) shares it.
    ssize_t n = send(r.client, data + *off, *len - *off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      *off += (size_t)n;
      r.stall_since = -1;
      if (*off == *len) {
        if (!urgent) r.bytes_out += *len - HEADER_SIZE;
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

static int read_client(void) {
  static unsigned char buf[64 * 1024];
  union {
    struct cmsghdr align;
    char space[CMSG_SPACE(sizeof(int))];
  } control;
  struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
  for (;;) {
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
    ssize_t n = recvmsg(r.client, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    // A failed call leaves msg untouched (msg_controllen still our buffer's size, the buffer never
    // written): it is judged as the error it is, before any control data is looked at.
    if (n < 0) {
      fail(END_CLIENT_GONE, 0, "client connection failed: %s", strerror(errno));
      return -1;
    }
    if (msg.msg_controllen > 0 || (msg.msg_flags & MSG_CTRUNC)) {
      for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < count; i++) close(((int *)CMSG_DATA(c))[i]);
      }
      fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: a descriptor may only travel with START");
      return -1;
    }
    if (n == 0) {
      fail(END_CLIENT_GONE, 0, "client closed the connection");
      return -1;
    }
    return decode(buf, (size_t)n);
  }
}

// The report, then the end: the program's own way when it ended, else by hanging it up first.
static _Noreturn void finish(void) {
  control_send_end();
  if (!r.child_done) {
    close(r.master);
    hangup_child();
    reap(true);
  }
  exit_like(r.status);
}

// The worker's channel ended (or broke its rules): the worker is gone, or it ended the session before
// its start (it shuts the channel for reading: src/worker/unit-start.ts). The report goes out all the
// same, so a worker that still reads can write its last frame after what was written; then the
// program is hung up and the helper ends as it ends.
_Noreturn void worker_gone(void) {
  if (!r.end_reason) fail(END_TERMINATED, ERR_SHUTDOWN, "the supervisor ended the session");
  control_send_end();
  close(r.master);
  hangup_child();
  reap(true);
  exit_like(r.status);
}

// The client may flow-fail only when output waits and it has credit for it: withholding credit is
// never an error (docs/protocol.md "Flow control").
static void check_stall(bool waiting) {
  if (!waiting) {
    r.stall_since = -1;
    return;
  }
  int64_t now = now_ms();
  int queued = outq();
  if (r.stall_since < 0 || queued < r.stall_outq) {
    r.stall_since = now; // the client read something: the clock starts again
    r.stall_outq = queued;
    return;
  }
  if (now - r.stall_since < r.write_timeout_ms) return;
  if (r.out_len > 0 || (r.send_credit > 0 && !r.master_eof && master_readable())) {
    fail(END_FLOW, ERR_FLOW, "client did not read its output within the write timeout");
    return;
  }
  r.stall_since = now;
}

_Noreturn void relay(void) {
  int sndbuf = 0;
  socklen_t size = sizeof sndbuf;
  getsockopt(r.client, SOL_SOCKET, SO_SNDBUF, &sndbuf, &size);
  r.outq_limit = sndbuf / 4 - 1 > OUTQ_BOUND ? sndbuf / 4 - 1 : OUTQ_BOUND;
  r.send_credit = INITIAL_WINDOW;
  r.recv_remaining = INITIAL_WINDOW;
  bool writable_seen = false; // poll reported the client writable since the last terminal read
  for (;;) {
    bool send_blocked = false, idle_after_exit = false, can_read = false;
    if (!r.end_reason) write_master();
    if (!r.end_reason) feed_eof();
    if (r.go && !r.end_reason) {
      if (write_client(&send_blocked) < 0) fail(END_CLIENT_GONE, 0, "client connection failed: %s", strerror(errno));
      bool room = r.out_len == 0 && r.send_credit > 0 && !r.master_eof && !send_blocked;
      if (room && (writable_seen || outq() <= r.outq_limit)) {
        writable_seen = false;
        int got = read_master();
        if (got == 0 && r.child_done) idle_after_exit = true;
        if (got > 0 && write_client(&send_blocked) < 0) fail(END_CLIENT_GONE, 0, "client connection failed: %s", strerror(errno));
      }
      can_read = r.out_len == 0 && r.send_credit > 0 && !r.master_eof && !send_blocked;
    }
    if (r.end_reason) finish();
    // Done: the program ended, and what its terminal held is out (or waits for credit that may never
    // come while nothing more is there: then nothing waits).
    if (r.go && r.child_done && r.out_len == 0 &&
        (r.master_eof || idle_after_exit || (r.send_credit == 0 && !master_readable()))) {
      r.end_reason = r.stopping ? END_STOP : END_EXIT;
      finish();
    }

    bool outq_full = can_read && outq() > r.outq_limit;
    check_stall(r.go && (send_blocked || outq_full));
    if (r.end_reason) finish();
    short master_events = 0;
    if (!r.master_eof) master_events = (short)((can_read && !outq_full ? POLLIN : 0) | (r.ring_len > 0 ? POLLOUT : 0));
    short client_events = 0;
    if (r.go) client_events = (short)(POLLIN | POLLRDHUP | (send_blocked || outq_full ? POLLOUT : 0));
    struct pollfd p[4] = {
        {.fd = r.sigfd, .events = POLLIN},
        {.fd = r.control, .events = POLLIN},
        {.fd = r.go ? r.client : -1, .events = client_events},
        {.fd = master_events ? r.master : -1, .events = master_events},
    };
    int timeout = -1;
    if (r.stall_since >= 0) {
      int64_t left = r.stall_since + r.write_timeout_ms - now_ms();
      timeout = left < 0 ? 0 : (int)left + 1;
    }
    if (r.eof_next >= 0 && r.ring_len == 0) {
      int64_t left = r.eof_next - now_ms();
      int eof_timeout = left < 0 ? 0 : (int)left + 1;
      if (timeout < 0 || eof_timeout < timeout) timeout = eof_timeout;
    }
    if (poll(p, 4, timeout) < 0) {
      if (errno == EINTR) continue;
      say(3, "poll: %s", strerror(errno));
      fail(END_INTERNAL, ERR_INTERNAL, "session helper failed: poll: %s", strerror(errno));
      continue;
    }
    if (p[0].revents) handle_signals();
    if (p[1].revents && control_read() < 0) worker_gone();
    if (p[2].revents & POLLOUT) writable_seen = true;
    if (p[2].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) read_client();
    if (p[3].revents & POLLHUP) r.master_hup = true;
  }
}
