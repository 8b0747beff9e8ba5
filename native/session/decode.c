// The client's data-phase frames, judged exactly as docs/protocol.md says: header first (type,
// direction, length, credit), then every field; any violation is the connection's fault (client_fault:
// the session's end, or in a kept session that connection's) with the ERROR code the protocol names. A push decoder: bytes go in as they arrive, split anywhere; each complete frame
// calls its effect (on_input … on_stop, frames.c), so RESIZE and SIGNAL act the moment they are decoded,
// never behind INPUT. It touches nothing but the client's decoder and credit, so a driver can feed it
// bytes with effects of its own (test/native/decoder-driver.c).
#include <stdio.h>
#include <string.h>

#define WIRE_TABLES
#include "bytes.h"
#include "helper.h"

const struct frame_rule *frame_rules(unsigned version) {
  return version >= 1 && version <= WIRE_VERSIONS ? wire_rules[version - 1] : NULL;
}

const char *frame_name(uint8_t type) {
  return type < sizeof wire_frame_names / sizeof wire_frame_names[0] ? wire_frame_names[type] : "?";
}

void decoder_init(struct decoder *dec, const struct frame_rule *rules) {
  memset(dec, 0, sizeof *dec);
  dec->rules = rules;
  dec->state = WANT_HEADER;
}

static const int allowed_signals[] = ALLOWED_SIGNALS;

// A complete header: the verdict needs no payload byte (docs/protocol.md "Frame header").
static int judge_header(struct session *s, struct client *c) {
  struct decoder *dec = &c->dec;
  uint8_t type = dec->small[0];
  uint32_t len = get_be32(dec->small + 1);
  const struct frame_rule *rule = &dec->rules[type];
  if (!rule->known) {
    client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: unknown frame type 0x%02x", type);
    return -1;
  }
  if (!rule->from_client) {
    client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: %s is not sent by a client", frame_name(type));
    return -1;
  }
  if (len < rule->min_length || len > rule->max_length) {
    client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: %s payload of %u bytes is outside %u..%u", frame_name(type),
             (unsigned)len, (unsigned)rule->min_length, (unsigned)rule->max_length);
    return -1;
  }
  // The requests that open a connection (version 3: LIST, ATTACH and STOP_SESSION beside START).
  if (type == FRAME_HELLO || type == FRAME_START || type == FRAME_LIST || type == FRAME_ATTACH || type == FRAME_STOP_SESSION) {
    client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: unexpected %s frame during a session", frame_name(type));
    return -1;
  }
  // A kept session's observer gets output only (docs/protocol.md "Roles"): judged on the header, so
  // nothing of the frame is applied.
  if (c->role == ROLE_OBSERVE && type != FRAME_CREDIT) {
    client_fault(s, c, END_PROTOCOL, ERR_NOT_CONTROLLER, "%s from a connection that is not the controller", frame_name(type));
    return -1;
  }
  // Every other payload but INPUT's is collected in `small`; the generated rules never allow more
  // (scripts/helper-wire.ts refuses to), and this keeps a table that did from writing past it.
  if (type != FRAME_INPUT && len > sizeof dec->small) {
    client_fault(s, c, END_INTERNAL, ERR_INTERNAL, "%s payload of %u bytes cannot be decoded here", frame_name(type), (unsigned)len);
    return -1;
  }
  // After END_INPUT the client sends no more INPUT (docs/protocol.md "END_INPUT"); after STOP it is discarded.
  if (type == FRAME_INPUT && dec->input_ended && !s->stopping) {
    client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: INPUT after END_INPUT");
    return -1;
  }
  if (type == FRAME_INPUT && len > c->recv_remaining) {
    client_fault(s, c, END_PROTOCOL, ERR_FLOW, "peer sent %u bytes with %u of credit", (unsigned)len, (unsigned)c->recv_remaining);
    return -1;
  }
  dec->type = type;
  dec->want = len;
  dec->got = 0;
  if (type == FRAME_INPUT) {
    c->recv_remaining -= len;
    dec->state = WANT_INPUT;
  } else {
    dec->state = WANT_SMALL;
  }
  return 0;
}

// A complete fixed-size payload (RESIZE, SIGNAL, STOP, END_INPUT, CREDIT).
static int act(struct session *s, struct client *c) {
  const unsigned char *p = c->dec.small;
  // Demoted between this frame's header and its end (a kept session's hand-over): refused all the same.
  if (c->role == ROLE_OBSERVE && c->dec.type != FRAME_CREDIT) {
    client_fault(s, c, END_PROTOCOL, ERR_NOT_CONTROLLER, "%s from a connection that is not the controller", frame_name(c->dec.type));
    return -1;
  }
  switch (c->dec.type) {
  case FRAME_RESIZE: {
    unsigned rows = get_be16(p), cols = get_be16(p + 2);
    if (rows == 0 || cols == 0) {
      client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: rows %u, cols %u: each must be 1..65535", rows, cols);
      return -1;
    }
    if (!s->stopping) on_resize(s, rows, cols);
    return 0;
  }
  case FRAME_SIGNAL: {
    int sig = p[0];
    if (sig < 1 || sig > MAX_SIGNAL) {
      client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: signal %d is outside 1..%d", sig, MAX_SIGNAL);
      return -1;
    }
    if (s->stopping) return 0; // discarded after STOP, as docs/protocol.md says
    bool allowed = false;
    for (size_t i = 0; i < sizeof allowed_signals / sizeof allowed_signals[0]; i++) allowed |= allowed_signals[i] == sig;
    if (!allowed) {
      client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "signal %d is not allowed", sig);
      return -1;
    }
    on_signal(s, sig);
    return 0;
  }
  case FRAME_STOP:
    if (!s->stopping) on_stop(s, c);
    return 0;
  case FRAME_END_INPUT:
    if (s->stopping) return 0; // races with STOP are discarded, as INPUT is
    if (c->dec.input_ended) {
      client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: END_INPUT sent twice");
      return -1;
    }
    c->dec.input_ended = true;
    on_end_input(s);
    return 0;
  case FRAME_CREDIT: {
    uint32_t bytes = get_be32(p);
    if (bytes < 1 || bytes > MAX_WINDOW) {
      client_fault(s, c, END_PROTOCOL, ERR_PROTOCOL, "protocol error: credit %u is outside 1..%u", (unsigned)bytes, (unsigned)MAX_WINDOW);
      return -1;
    }
    if ((uint64_t)c->send_credit + bytes > MAX_WINDOW) {
      client_fault(s, c, END_PROTOCOL, ERR_FLOW, "credit beyond the %u-byte window", (unsigned)MAX_WINDOW);
      return -1;
    }
    c->send_credit += bytes;
    return 0;
  }
  }
  client_fault(s, c, END_INTERNAL, ERR_INTERNAL, "decoder in an impossible state");
  return -1;
}

int decode(struct session *s, struct client *c, const unsigned char *data, size_t len) {
  struct decoder *dec = &c->dec;
  while (len > 0 || (dec->state == WANT_SMALL && dec->want == 0)) {
    if (dec->state == WANT_INPUT) {
      size_t take = len < dec->want ? len : dec->want;
      on_input(s, c, data, take);
      data += take, len -= take;
      dec->want -= (uint32_t)take;
      if (dec->want == 0) dec->state = WANT_HEADER;
      continue;
    }
    size_t need = (dec->state == WANT_HEADER ? HEADER_SIZE : dec->want) - dec->got;
    size_t take = len < need ? len : need;
    memcpy(dec->small + dec->got, data, take);
    dec->got += take;
    data += take, len -= take;
    if (take < need) break;
    if (dec->state == WANT_HEADER) {
      if (judge_header(s, c) < 0) return -1;
      continue;
    }
    dec->state = WANT_HEADER;
    dec->got = 0;
    dec->want = 0;
    if (act(s, c) < 0) return -1;
  }
  return 0;
}
