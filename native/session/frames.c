// What the client's frames do, once the decoder (decode.c) has judged them: INPUT into the ring for
// the terminal, RESIZE and SIGNAL at once, STOP and END_INPUT.
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "helper.h"

void on_input(struct session *s, struct client *c, const unsigned char *data, size_t len) {
  c->bytes_in += len;
  // After STOP, or once nobody can read the terminal, input is dropped but still counted; so is the rest
  // of an INPUT frame begun by a kept session's controller that has been demoted since (never applied).
  if (s->stopping || s->master_eof || c->role == ROLE_OBSERVE) {
    consume_input(c, len);
    return;
  }
  size_t tail = (c->ring_head + c->ring_len) % sizeof c->ring;
  size_t first = sizeof c->ring - tail < len ? sizeof c->ring - tail : len;
  memcpy(c->ring + tail, data, first);
  memcpy(c->ring, data + first, len - first);
  c->ring_len += len;
}

void on_resize(struct session *s, unsigned rows, unsigned cols) {
  // The kernel sends SIGWINCH to the foreground group when the size changes.
  if (!s->master_eof) set_winsize(s, s->master, rows, cols);
}

void on_signal(struct session *s, int sig) {
  // Once the program is reaped its pid is free (nothing of the session holds it: the terminal's session
  // went with its leader, so tcgetpgrp() gives 0), and the next process to get it is not the session's:
  // a signal then reaches nobody, as on a terminal whose session has ended.
  if (s->child.done || s->child.pid <= 0) return;
  // As a terminal does: to its foreground process group (termios(3) "job control"), never to the
  // helper. Before the program has taken the terminal there is no such group: its own then.
  pid_t group = s->master >= 0 ? tcgetpgrp(s->master) : -1;
  if (group <= 0) group = s->child.pid;
  if (kill(-group, sig) < 0 && errno == ESRCH) kill(s->child.pid, sig);
}

// The worker stops the session's processes in steps (src/worker/unit-stop.ts); a worker that cannot
// hear it is gone, and the helper's own end (end.c) takes over.
void on_stop(struct session *s, struct client *c) {
  s->stopping = true;
  // Input already queued for the terminal is dropped too: the session is ending.
  consume_input(c, c->ring_len);
  c->ring_len = 0;
  control_send_stop(&s->worker);
}

void on_end_input(struct session *s) {
  end_input(s);
}
