// A kept session's relay: each turn the controller's input goes to the terminal, the terminal drains
// into the ring (always: the program never waits for a reader), every connection gets what it can
// from its cursor, connections that failed are let go, then keep_check_done() decides, then poll waits.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "bytes.h"
#include "keep.h"

struct keep *keep_new(uint64_t retain, unsigned max_observers, uint64_t session_id) {
  struct keep *k = calloc(1, sizeof *k);
  if (!k || !ring_init(&k->ring, retain)) return NULL;
  k->max_observers = max_observers;
  k->session_id = session_id;
  return k;
}

// The session ends when the program is done, the terminal drained into the ring, and what the
// controller (or, without one, every connection) may take is out: v2's drain rule, at the ring. With
// no connection the ring waits for an ATTACH (PROGRAM_ENDED told the worker). At the end each attached
// connection is let go (DETACHED ending) before END, which then carries no remainder.
static void keep_check_done(struct session *s) {
  struct keep *k = s->keep;
  if (s->child.done && !k->program_ended_sent) {
    unsigned char status[PROGRAM_ENDED_SIZE];
    put_be32(status, (uint32_t)s->child.status);
    control_send_message(&s->worker, CONTROL_PROGRAM_ENDED, status, sizeof status);
    k->program_ended_sent = true;
  }
  if (!s->end.reason && s->child.done && (s->master_eof || k->idle_after_exit)) {
    bool any = false, drained = true;
    for (int i = 0; i < MAX_CONNS; i++) {
      const struct client *c = k->conns[i];
      if (!c || !c->go || (k->controller && c != k->controller)) continue;
      any = true;
      drained = drained && conn_drained(s, c);
    }
    if (any && drained) end_with(s, s->stopping ? END_STOP : END_EXIT, 0, "%s", "");
  }
  // With a rendezvous the session outlives its worker (keep-rendezvous.c); without one it ends with it.
  if (!s->end.reason && s->worker.gone && s->rendezvous >= 0 && s->worker.fd >= 0) keep_orphaned(s);
  if (!s->end.reason && s->worker.gone && s->rendezvous < 0) end_with(s, END_TERMINATED, ERR_SHUTDOWN, "the supervisor ended the session");
  if (!s->end.reason) return;
  if (!s->worker.ended) {
    // Before GO the START connection is still the worker's, and nothing was written to it.
    for (int i = 0; i < MAX_CONNS; i++)
      if (k->conns[i] && k->conns[i]->go) conn_detach(s, k->conns[i], DETACH_ENDING, 0, "");
    control_send_report(s, k->bytes_in, k->bytes_out, NULL, 0);
    if (!s->child.done) child_stop_begin(s);
  }
  if (s->child.done) exit_like(s->child.status);
  child_stop_step(s);
}

// A connection's fault as DETACHED says it: the end reasons a connection can have are DETACHED's own
// (3 client gone, 4 flow, 5 protocol); the helper's own failure on one connection (END_INTERNAL, a
// decoder in a state it cannot be in) is told as that connection's protocol failure.
_Static_assert((int)END_CLIENT_GONE == (int)DETACH_CLIENT_GONE && (int)END_FLOW == (int)DETACH_FLOW && (int)END_PROTOCOL == (int)DETACH_PROTOCOL, "one code each");

static void let_go(struct session *s, struct client *c) {
  const struct ending *f = &c->fault;
  bool own = f->reason == DETACH_CLIENT_GONE || f->reason == DETACH_FLOW || f->reason == DETACH_PROTOCOL;
  conn_detach(s, c, own ? f->reason : DETACH_PROTOCOL, own ? f->code : ERR_PROTOCOL, f->text);
}

_Noreturn void keep_relay(struct session *s, struct client *c0, int sigfd) {
  struct keep *k = s->keep;
  client_begin(c0);
  keep_adopt(s, c0);
  static struct client idle_client; // feed_eof's view when nobody controls: no input waits
  for (;;) {
    bool blocked[MAX_CONNS] = {false};
    k->idle_after_exit = false;
    if (!s->end.reason) {
      if (k->controller) terminal_write(s, k->controller);
      feed_eof(s, k->controller ? k->controller : &idle_client);
      // Nothing is read before GO: the START connection's output starts at offset 0 with its STARTED.
      bool idle = false;
      if (c0->go && !s->master_eof) ring_fill(s, &k->ring, &idle);
      k->idle_after_exit = idle && s->child.done;
      for (int i = 0; i < MAX_CONNS; i++) {
        struct client *c = k->conns[i];
        if (!c || !c->go) continue;
        conn_pump(s, c, &blocked[i]);
        if (!c->fault.reason) check_stall(s, c, blocked[i]);
        if (c->fault.reason) let_go(s, c);
      }
    }
    keep_check_done(s);
    bool running = !s->end.reason;

    struct pollfd p[4 + MAX_CONNS];
    short master_events = (short)(POLLIN | (k->controller && k->controller->ring_len > 0 ? POLLOUT : 0));
    p[0] = (struct pollfd){.fd = sigfd, .events = POLLIN};
    p[1] = (struct pollfd){.fd = running && !s->worker.gone ? s->worker.fd : -1, .events = POLLIN};
    p[2] = (struct pollfd){.fd = running && c0->go && !s->master_eof ? s->master : -1, .events = master_events};
    int timeout = -1;
    for (int i = 0; i < MAX_CONNS; i++) {
      struct client *c = k->conns[i];
      bool on = running && c && c->go;
      p[3 + i] = (struct pollfd){.fd = on ? c->fd : -1, .events = (short)(POLLIN | POLLRDHUP | (on && blocked[i] ? POLLOUT : 0))};
      if (on && c->stall_since >= 0) timeout = timeout_earlier(timeout, timeout_until(c->stall_since + c->write_timeout_ms));
    }
    // The next worker's channel, once the last one is gone: one at a time, never beside a live one.
    p[3 + MAX_CONNS] = (struct pollfd){.fd = running && s->worker.gone && s->rendezvous >= 0 ? s->rendezvous : -1, .events = POLLIN};
    if (running && (!k->controller || k->controller->ring_len == 0)) timeout = timeout_earlier(timeout, timeout_until(s->eof.next));
    timeout = timeout_earlier(timeout, child_stop_timeout(s));
    if (poll(p, 4 + MAX_CONNS, timeout) < 0) {
      if (errno == EINTR) continue;
      say(&s->worker, 3, "poll: %s", strerror(errno));
      end_with(s, END_INTERNAL, ERR_INTERNAL, "session helper failed: poll: %s", strerror(errno));
      continue;
    }
    if (p[0].revents) child_signals(s, sigfd);
    if (p[1].revents) control_read(s, c0);
    if (p[3 + MAX_CONNS].revents) keep_accept(s);
    for (int i = 0; i < MAX_CONNS; i++) {
      struct client *c = k->conns[i];
      // A connection attached during this turn has no events yet: p[] was built before it came.
      if (!c || !c->go || p[3 + i].fd != c->fd || !(p[3 + i].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) continue;
      client_read(s, c);
      if (c->fault.reason) let_go(s, c);
    }
  }
}
