// The client's data-phase frames, judged exactly as docs/protocol.md says: header first (type,
// direction, length, credit), then every field; any violation ends the session with the ERROR code
// the protocol names. RESIZE and SIGNAL act the moment they are decoded, never behind INPUT.
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "helper.h"

// Version 1 (docs/protocol.md "Frame header"). Index: type byte.
static const struct frame_rule rules_v1[256] = {
    [FRAME_HELLO] = {true, true, 8, 8},
    [FRAME_WELCOME] = {true, false, 2, 2},
    [FRAME_START] = {true, true, 28, MAX_FRAME_PAYLOAD},
    [FRAME_STARTED] = {true, false, 5, 4 + MAX_UNIT_NAME},
    [FRAME_INPUT] = {true, true, 1, MAX_IO_PAYLOAD},
    [FRAME_OUTPUT] = {true, false, 1, MAX_IO_PAYLOAD},
    [FRAME_RESIZE] = {true, true, 4, 4},
    [FRAME_SIGNAL] = {true, true, 1, 1},
    [FRAME_STOP] = {true, true, 0, 0},
    [FRAME_STOPPED] = {true, false, 0, 0},
    [FRAME_EXIT] = {true, false, 10, 9 + MAX_RESULT},
    [FRAME_ERROR] = {true, false, 2, MAX_IO_PAYLOAD},
    [FRAME_CREDIT] = {true, true, 4, 4},
};

// Version 2 (docs/protocol.md "Version 2"): END_INPUT is new; STARTED, STOPPED and EXIT carry more.
static const struct frame_rule rules_v2[256] = {
    [FRAME_HELLO] = {true, true, 8, 8},
    [FRAME_WELCOME] = {true, false, 2, 2},
    [FRAME_START] = {true, true, 28, MAX_FRAME_PAYLOAD},
    [FRAME_STARTED] = {true, false, 13, MAX_FRAME_PAYLOAD},
    [FRAME_INPUT] = {true, true, 1, MAX_IO_PAYLOAD},
    [FRAME_OUTPUT] = {true, false, 1, MAX_IO_PAYLOAD},
    [FRAME_RESIZE] = {true, true, 4, 4},
    [FRAME_SIGNAL] = {true, true, 1, 1},
    [FRAME_STOP] = {true, true, 0, 0},
    [FRAME_STOPPED] = {true, false, 74, 73 + MAX_RESULT},
    [FRAME_EXIT] = {true, false, 74, 73 + MAX_RESULT},
    [FRAME_ERROR] = {true, false, 2, MAX_IO_PAYLOAD},
    [FRAME_CREDIT] = {true, true, 4, 4},
    [FRAME_END_INPUT] = {true, true, 0, 0},
};

const struct frame_rule *frame_rules(unsigned version) {
  return version == 1 ? rules_v1 : version == 2 ? rules_v2 : NULL;
}

static const int allowed_signals[] = ALLOWED_SIGNALS;

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const char *frame_name(uint8_t type) {
  static const char *names[] = {"", "HELLO", "WELCOME", "START", "STARTED", "INPUT", "OUTPUT", "RESIZE",
                                "SIGNAL", "STOP", "STOPPED", "EXIT", "ERROR", "CREDIT", "END_INPUT"};
  return type < sizeof names / sizeof names[0] ? names[type] : "?";
}

void fail(int reason, uint16_t code, const char *fmt, ...) {
  if (r.end_reason) return;
  r.end_reason = reason;
  r.end_code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r.end_text, sizeof r.end_text, fmt, ap);
  va_end(ap);
}

// Input bytes are done with (written to the terminal, or dropped): grant them back in batches of a
// quarter window, as the worker's relay did (src/protocol/credit.ts ReceiveWindow.consume).
void consume_input(size_t bytes) {
  r.ungranted += (uint32_t)bytes;
  if (r.ungranted < INITIAL_WINDOW / 4) return;
  r.credit_owed += r.ungranted;
  r.recv_remaining += r.ungranted;
  r.ungranted = 0;
}

static void input_bytes(const unsigned char *data, size_t len) {
  r.bytes_in += len;
  // After STOP, or once nobody can read the terminal, input is dropped but still counted.
  if (r.stopping || r.master_eof) {
    consume_input(len);
    return;
  }
  size_t tail = (r.ring_head + r.ring_len) % sizeof r.ring;
  size_t first = sizeof r.ring - tail < len ? sizeof r.ring - tail : len;
  memcpy(r.ring + tail, data, first);
  memcpy(r.ring, data + first, len - first);
  r.ring_len += len;
}

static void deliver_signal(int sig) {
  // As a terminal does: to its foreground process group (termios(3) "job control"), never to the
  // helper. Before the program has taken the terminal there is no such group: its own then.
  pid_t group = tcgetpgrp(r.master);
  if (group <= 0) group = r.child;
  if (kill(-group, sig) < 0 && errno == ESRCH) kill(r.child, sig);
}

// A complete header: the verdict needs no payload byte (docs/protocol.md "Frame header").
static int judge_header(void) {
  uint8_t type = r.dec.small[0];
  uint32_t len = be32(r.dec.small + 1);
  const struct frame_rule *rule = &r.dec.rules[type];
  if (!rule->known) {
    fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: unknown frame type 0x%02x", type);
    return -1;
  }
  if (!rule->from_client) {
    fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: %s is not sent by a client", frame_name(type));
    return -1;
  }
  if (len < rule->min_length || len > rule->max_length) {
    fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: %s payload of %u bytes is outside %u..%u", frame_name(type),
         (unsigned)len, (unsigned)rule->min_length, (unsigned)rule->max_length);
    return -1;
  }
  if (type == FRAME_HELLO || type == FRAME_START) {
    fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: unexpected %s frame during a session", frame_name(type));
    return -1;
  }
  // After END_INPUT the client sends no more INPUT (docs/protocol.md "END_INPUT"); after STOP it is discarded.
  if (type == FRAME_INPUT && r.input_ended && !r.stopping) {
    fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: INPUT after END_INPUT");
    return -1;
  }
  if (type == FRAME_INPUT && len > r.recv_remaining) {
    fail(END_PROTOCOL, ERR_FLOW, "peer sent %u bytes with %u of credit", (unsigned)len, (unsigned)r.recv_remaining);
    return -1;
  }
  r.dec.type = type;
  r.dec.want = len;
  r.dec.got = 0;
  if (type == FRAME_INPUT) {
    r.recv_remaining -= len;
    r.dec.state = WANT_INPUT;
  } else {
    r.dec.state = WANT_SMALL;
  }
  return 0;
}

// A complete fixed-size payload (RESIZE, SIGNAL, STOP, CREDIT).
static int act(void) {
  const unsigned char *p = r.dec.small;
  switch (r.dec.type) {
  case FRAME_RESIZE: {
    unsigned rows = (unsigned)p[0] << 8 | p[1], cols = (unsigned)p[2] << 8 | p[3];
    if (rows == 0 || cols == 0) {
      fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: rows %u, cols %u: each must be 1..65535", rows, cols);
      return -1;
    }
    // The kernel sends SIGWINCH to the foreground group when the size changes.
    if (!r.stopping && !r.master_eof) set_winsize(r.master, rows, cols);
    return 0;
  }
  case FRAME_SIGNAL: {
    int sig = p[0];
    if (sig < 1 || sig > MAX_SIGNAL) {
      fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: signal %d is outside 1..%d", sig, MAX_SIGNAL);
      return -1;
    }
    if (r.stopping) return 0; // discarded after STOP, as docs/protocol.md says
    bool allowed = false;
    for (size_t i = 0; i < sizeof allowed_signals / sizeof allowed_signals[0]; i++) allowed |= allowed_signals[i] == sig;
    if (!allowed) {
      fail(END_PROTOCOL, ERR_PROTOCOL, "signal %d is not allowed", sig);
      return -1;
    }
    deliver_signal(sig);
    return 0;
  }
  case FRAME_STOP:
    if (!r.stopping) {
      r.stopping = true;
      // Input already queued for the terminal is dropped too: the session is ending.
      consume_input(r.ring_len);
      r.ring_len = 0;
      control_send_stop();
    }
    return 0;
  case FRAME_END_INPUT:
    if (r.stopping) return 0; // races with STOP are discarded, as INPUT is
    if (r.input_ended) {
      fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: END_INPUT sent twice");
      return -1;
    }
    end_input();
    return 0;
  case FRAME_CREDIT: {
    uint32_t bytes = be32(p);
    if (bytes < 1 || bytes > MAX_WINDOW) {
      fail(END_PROTOCOL, ERR_PROTOCOL, "protocol error: credit %u is outside 1..%u", (unsigned)bytes, (unsigned)MAX_WINDOW);
      return -1;
    }
    if ((uint64_t)r.send_credit + bytes > MAX_WINDOW) {
      fail(END_PROTOCOL, ERR_FLOW, "credit beyond the %u-byte window", (unsigned)MAX_WINDOW);
      return -1;
    }
    r.send_credit += bytes;
    return 0;
  }
  }
  fail(END_INTERNAL, ERR_INTERNAL, "decoder in an impossible state");
  return -1;
}

int decode(const unsigned char *data, size_t len) {
  while (len > 0 || (r.dec.state == WANT_SMALL && r.dec.want == 0)) {
    if (r.dec.state == WANT_INPUT) {
      size_t take = len < r.dec.want ? len : r.dec.want;
      input_bytes(data, take);
      data += take, len -= take;
      r.dec.want -= (uint32_t)take;
      if (r.dec.want == 0) r.dec.state = WANT_HEADER;
      continue;
    }
    size_t need = (r.dec.state == WANT_HEADER ? HEADER_SIZE : r.dec.want) - r.dec.got;
    size_t take = len < need ? len : need;
    memcpy(r.dec.small + r.dec.got, data, take);
    r.dec.got += take;
    data += take, len -= take;
    if (take < need) break;
    if (r.dec.state == WANT_HEADER) {
      if (judge_header() < 0) return -1;
      continue;
    }
    r.dec.state = WANT_HEADER;
    r.dec.got = 0;
    r.dec.want = 0;
    if (act() < 0) return -1;
  }
  return 0;
}
