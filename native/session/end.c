// The session's end: end_with() is the only writer of the end reason (set once, the first cause
// wins), and check_done(), called once per turn of the relay, is the only place that acts on it, as
// systemd's run_context_check_done(): the report to the worker, then the program's end in steps
// (child.c) if it still runs, then the helper's exit as the program's.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "helper.h"

void end_with(struct session *s, int reason, uint16_t code, const char *fmt, ...) {
  if (s->end.reason) return;
  s->end.reason = reason;
  s->end.code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->end.text, sizeof s->end.text, fmt, ap);
  va_end(ap);
}

void check_done(struct session *s, struct client *c, bool idle_after_exit) {
  // The program ended, and what its terminal held is out (or waits for credit that may never come
  // while nothing more is there: then nothing waits).
  if (!s->end.reason && c->go && s->child.done && c->out_len == 0 &&
      (s->master_eof || idle_after_exit || (c->send_credit == 0 && !terminal_readable(s))))
    end_with(s, s->stopping ? END_STOP : END_EXIT, 0, "%s", "");
  // The worker's channel ended (or broke its rules): the worker is gone, or it ended the session
  // before its start (it shuts the channel for reading: src/worker/unit-start.ts). The report goes
  // out all the same, so a worker that still reads can write its last frame after what was written.
  if (!s->end.reason && s->worker.gone) end_with(s, END_TERMINATED, ERR_SHUTDOWN, "the supervisor ended the session");
  if (!s->end.reason) return;
  if (!s->worker.ended) {
    control_send_end(s, c);
    // Nothing is written to the client from here on; a program that still runs is ended by the
    // helper itself, whoever else is there to stop the unit.
    if (!s->child.done) child_stop_begin(s);
  }
  if (s->child.done) exit_like(s->child.status);
  child_stop_step(s);
}

// A failure before the program's fork: reported as the end, then the helper exits with
// `exit_code`, by the same path as every end.
_Noreturn void give_up(struct session *s, struct client *c, int exit_code, const char *fmt, const char *detail) {
  end_with(s, END_INTERNAL, ERR_INTERNAL, fmt, detail);
  say(&s->worker, 3, "%s", s->end.text);
  s->child.status = (exit_code & 0xff) << 8;
  s->child.done = true;
  check_done(s, c, false);
  exit(exit_code); // not reached: check_done exits once the end is reported and no program runs
}
