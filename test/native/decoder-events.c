// The decoder's effects as a log, for the in-process drivers of native/session/decode.c: each frame the
// decoder accepts and the end it sets append one line, so two runs over the same bytes, split
// differently, can be compared line for line (as ws's Receiver is tested by writing bytes into it).
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "decoder-events.h"

struct events events;

static void append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void append(const char *fmt, ...) {
  if (events.len >= sizeof events.log - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(events.log + events.len, sizeof events.log - events.len, fmt, ap);
  va_end(ap);
  if (n > 0) events.len = events.len + (size_t)n < sizeof events.log ? events.len + (size_t)n : sizeof events.log - 1;
}

// INPUT is a byte stream: however reads cut it, the same bytes arrive in the same order. Consecutive
// INPUT bytes are logged as one line, written when anything else happens or the feed ends.
static int input_open;

static void flush_input(void) {
  if (input_open) append("\n");
  input_open = 0;
}

void on_input(struct session *s, struct client *c, const unsigned char *data, size_t len) {
  (void)s;
  c->bytes_in += len;
  if (!input_open) append("input ");
  input_open = 1;
  for (size_t i = 0; i < len; i++) append("%02x", data[i]);
}

void on_resize(struct session *s, unsigned rows, unsigned cols) {
  (void)s;
  flush_input();
  append("resize %u %u\n", rows, cols);
}

void on_signal(struct session *s, int sig) {
  (void)s;
  flush_input();
  append("signal %d\n", sig);
}

void on_stop(struct session *s, struct client *c) {
  (void)c;
  s->stopping = true;
  flush_input();
  append("stop\n");
}

void on_end_input(struct session *s) {
  (void)s;
  flush_input();
  append("end-input\n");
}

void end_with(struct session *s, int reason, uint16_t code, const char *fmt, ...) {
  if (s->end.reason) return;
  s->end.reason = reason;
  s->end.code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->end.text, sizeof s->end.text, fmt, ap);
  va_end(ap);
  flush_input();
  append("end %d %u %s\n", reason, (unsigned)code, s->end.text);
}

// A connection's fault is the session's end here, as in a session that is not kept.
void client_fault(struct session *s, struct client *c, int reason, uint16_t code, const char *fmt, ...) {
  (void)c;
  if (s->end.reason) return;
  s->end.reason = reason;
  s->end.code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->end.text, sizeof s->end.text, fmt, ap);
  va_end(ap);
  flush_input();
  append("end %d %u %s\n", reason, (unsigned)code, s->end.text);
}

void events_reset(struct session *s, struct client *c, unsigned version) {
  // What the decoder reads or writes, not the buffers it never touches (a fresh 300 KiB a run would
  // be most of the fuzzer's time).
  memset(&s->end, 0, sizeof s->end);
  s->stopping = false;
  s->master = -1;
  s->child.pid = 0;
  c->version = version;
  c->bytes_in = 0;
  c->send_credit = INITIAL_WINDOW;
  c->recv_remaining = INITIAL_WINDOW;
  decoder_init(&c->dec, frame_rules(version));
  events.len = 0;
  events.log[0] = '\0';
  input_open = 0;
}

// Feeds `data` in pieces cut at the offsets in `cuts` (ascending), as reads would bring it, and stops
// at the first violation as the helper does (it reads nothing after its end).
void events_feed(struct session *s, struct client *c, const unsigned char *data, size_t len, const size_t *cuts, size_t ncuts) {
  size_t from = 0;
  for (size_t i = 0; i <= ncuts && !s->end.reason; i++) {
    size_t to = i < ncuts ? cuts[i] : len;
    if (to < from || to > len) to = from;
    if (decode(s, c, data + from, to - from) < 0) break;
    from = to;
  }
  flush_input();
}
