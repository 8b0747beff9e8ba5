// The data phase: client ⇄ terminal, with credit both ways. The terminal is read only while the
// client has credit and the socket's queue is short (SIOCOUTQ), so a slow client throttles the
// program through the kernel (as systemd's ptyfwd does) and a paused client loses nothing. Each turn
// moves what can move, then check_done() (end.c) decides, then poll waits for the next event; once the
// end is reported only the program's end is waited for (signals and the stop steps' deadline).
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "helper.h"

_Noreturn void relay(struct session *s, struct client *c, int sigfd) {
  client_begin(c);
  bool writable_seen = false; // poll reported the client writable since the last terminal read
  for (;;) {
    bool send_blocked = false, idle_after_exit = false, can_read = false, outq_full = false;
    if (!s->end.reason) {
      terminal_write(s, c);
      feed_eof(s, c);
    }
    if (!s->end.reason && c->go) {
      if (client_write(c, &send_blocked) < 0) end_with(s, END_CLIENT_GONE, 0, "client connection failed: %s", strerror(errno));
      bool room = c->out_len == 0 && c->send_credit > 0 && !s->master_eof && !send_blocked;
      if (!s->end.reason && room && (writable_seen || client_outq(c) <= c->outq_limit)) {
        writable_seen = false;
        int got = terminal_read(s, c);
        if (got == 0 && s->child.done) idle_after_exit = true;
        if (got > 0 && client_write(c, &send_blocked) < 0) end_with(s, END_CLIENT_GONE, 0, "client connection failed: %s", strerror(errno));
      }
      can_read = c->out_len == 0 && c->send_credit > 0 && !s->master_eof && !send_blocked;
      outq_full = can_read && client_outq(c) > c->outq_limit;
    }
    if (!s->end.reason) check_stall(s, c, c->go && (send_blocked || outq_full));
    check_done(s, c, idle_after_exit);
    bool running = !s->end.reason;

    short master_events = 0;
    if (running && !s->master_eof) master_events = (short)((can_read && !outq_full ? POLLIN : 0) | (c->ring_len > 0 ? POLLOUT : 0));
    short client_events = 0;
    if (running && c->go) client_events = (short)(POLLIN | POLLRDHUP | (send_blocked || outq_full ? POLLOUT : 0));
    struct pollfd p[4] = {
        {.fd = sigfd, .events = POLLIN},
        {.fd = running && !s->worker.gone ? s->worker.fd : -1, .events = POLLIN},
        {.fd = client_events ? c->fd : -1, .events = client_events},
        {.fd = master_events ? s->master : -1, .events = master_events},
    };
    int timeout = running ? timeout_until(c->stall_since >= 0 ? c->stall_since + c->write_timeout_ms : -1) : -1;
    if (running && c->ring_len == 0) timeout = timeout_earlier(timeout, timeout_until(s->eof.next));
    timeout = timeout_earlier(timeout, child_stop_timeout(s));
    if (poll(p, 4, timeout) < 0) {
      if (errno == EINTR) continue;
      say(&s->worker, 3, "poll: %s", strerror(errno));
      end_with(s, END_INTERNAL, ERR_INTERNAL, "session helper failed: poll: %s", strerror(errno));
      continue;
    }
    if (p[0].revents) child_signals(s, sigfd);
    if (p[1].revents) control_read(s, c);
    if (p[2].revents & POLLOUT) writable_seen = true;
    if (p[2].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) client_read(s, c);
  }
}
