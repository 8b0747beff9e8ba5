// A kept session's connections: output from the ring at each one's cursor within its credit, the
// small frames a kept session adds (TRUNCATED, CONTROLLER_CHANGED) at frame boundaries, and letting a
// connection go (DETACHED to the worker with the rest of its frame in progress).
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "keep.h"

bool keep_behind(const struct session *s, const struct client *c) {
  return c->cursor < s->keep->ring.next;
}

unsigned keep_observers(const struct keep *k) {
  unsigned n = 0;
  for (int i = 0; i < MAX_CONNS; i++) n += k->conns[i] && k->conns[i]->role == ROLE_OBSERVE;
  return n;
}

// The START connection: conn 0, the controller of generation 1, from offset 0.
void keep_adopt(struct session *s, struct client *c0) {
  struct keep *k = s->keep;
  c0->conn = 0;
  c0->role = ROLE_CONTROL;
  c0->cursor = 0;
  k->conns[0] = c0;
  k->controller = c0;
  k->generation = 1;
  k->used[0] |= 1;
  k->first = c0;
  k->version = c0->version;
  k->write_timeout_ms = c0->write_timeout_ms;
}

static void notice_append(struct client *c, const unsigned char *frame, size_t len) {
  memcpy(c->notice + c->notice_len, frame, len);
  c->notice_len += len;
}

// The next frames from the ring, if there is room for them: a CONTROLLER_CHANGED that waits, a TRUNCATED
// when the ring has passed the cursor (an observer is let go with FLOW instead: it must never hold the
// ring back), an OUTPUT within credit. false: nothing was added.
static bool conn_fill(struct session *s, struct client *c) {
  struct keep *k = s->keep;
  bool added = false;
  if (c->change_pending && c->notice_len + HEADER_SIZE + 5 <= sizeof c->notice) {
    unsigned char f[HEADER_SIZE + 5] = {FRAME_CONTROLLER_CHANGED};
    put_be32(f + 1, 5);
    put_be32(f + HEADER_SIZE, k->generation);
    f[HEADER_SIZE + 4] = c->role;
    notice_append(c, f, sizeof f);
    c->change_pending = false;
    added = true;
  }
  if (c->out_len > 0) return added;
  uint64_t oldest = ring_oldest(&k->ring);
  if (c->cursor < oldest) {
    if (c->role == ROLE_OBSERVE) {
      client_fault(s, c, END_FLOW, ERR_FLOW, "the session's output passed this observer by more than it retains");
      return added;
    }
    if (c->notice_len + HEADER_SIZE + 16 > sizeof c->notice) return added;
    unsigned char f[HEADER_SIZE + 16] = {FRAME_TRUNCATED};
    put_be32(f + 1, 16);
    put_be64(f + HEADER_SIZE, oldest);
    put_be64(f + HEADER_SIZE + 8, oldest - c->cursor);
    notice_append(c, f, sizeof f);
    c->cursor = oldest;
    added = true;
  }
  uint64_t waiting = k->ring.next - c->cursor;
  size_t len = c->send_credit < MAX_IO_PAYLOAD ? c->send_credit : MAX_IO_PAYLOAD;
  if (waiting < len) len = (size_t)waiting;
  if (len == 0) return added;
  ring_copy(&k->ring, c->cursor, c->out + HEADER_SIZE, len);
  c->out[0] = FRAME_OUTPUT;
  put_be32(c->out + 1, (uint32_t)len);
  c->out_len = HEADER_SIZE + len;
  c->out_off = 0;
  c->cursor += len;
  c->send_credit -= (uint32_t)len;
  return true;
}

// Everything that can go out now; *blocked: the socket took less than offered.
void conn_pump(struct session *s, struct client *c, bool *blocked) {
  for (int rounds = 0; !c->fault.reason; rounds++) {
    if (client_write(c, blocked) < 0) {
      client_fault(s, c, END_CLIENT_GONE, 0, "client connection failed");
      return;
    }
    // A bound per turn, so one fast reader cannot keep the others and the terminal waiting.
    if (*blocked || rounds == 64 || !conn_fill(s, c)) return;
  }
}

// Nothing of this connection waits: every byte up to the ring's next is sent. A connection out of
// credit is not drained (v2's drain rule: the end waits while the client grants credit or reads; the
// write timeout bounds one that has credit and does not read): otherwise an ATTACH to a program that
// ended while detached got EXIT after its first window of replay.
bool conn_drained(const struct session *s, const struct client *c) {
  return c->started_off == c->started_len && c->notice_len == 0 && c->out_len == 0 && c->urgent_off == 0 &&
         c->cursor == s->keep->ring.next;
}

// The rest of the frame in progress (of the frames queued whole: started's ATTACHED and TRUNCATED, or
// notice's), which the worker writes before anything of its own. bytes_out counts a begun OUTPUT whole.
static const unsigned char *remainder_of(struct client *c, size_t *len) {
  *len = 0;
  if (c->started_off > 0 && c->started_off < c->started_len) return *len = c->started_len - c->started_off, c->started + c->started_off;
  if (c->notice_off > 0) return *len = c->notice_len - c->notice_off, c->notice + c->notice_off;
  if (c->urgent_off > 0 && c->urgent_off < c->urgent_len) return *len = c->urgent_len - c->urgent_off, c->urgent + c->urgent_off;
  if (c->out_off > 0 && c->out_off < c->out_len) {
    c->bytes_out += c->out_len - HEADER_SIZE;
    return *len = c->out_len - c->out_off, c->out + c->out_off;
  }
  return NULL;
}

// DETACHED: conn u8, reason u8, code u16, remainder length u32, remainder, text.
void control_send_detached(struct session *s, uint8_t conn, int reason, uint16_t code, const unsigned char *rest, size_t rest_len, const char *text) {
  static unsigned char payload[DETACHED_FIXED_SIZE + MAX_REMAINDER + MAX_REPORT_TEXT];
  size_t text_len = utf8_cut(text, MAX_REPORT_TEXT);
  payload[0] = conn;
  payload[1] = (unsigned char)reason;
  put_be16(payload + 2, code);
  put_be32(payload + 4, (uint32_t)rest_len);
  if (rest_len) memcpy(payload + DETACHED_FIXED_SIZE, rest, rest_len);
  memcpy(payload + DETACHED_FIXED_SIZE + rest_len, text, text_len);
  control_send_message(&s->worker, CONTROL_DETACHED, payload, DETACHED_FIXED_SIZE + rest_len + text_len);
  // The number is free again: the channel is ordered, so the worker reuses it only after reading this
  // DETACHED, and an ATTACH with it then finds it free (a session is attached any number of times in
  // its life, at most 255 connections at once). Conn 0, the START's, is never given again.
  if (conn != 0) s->keep->used[conn / 8] &= (uint8_t)~(1u << (conn % 8));
}

// Lets the connection go: nothing more is written to it here; the worker writes the remainder, then
// ERROR(code) or (ending) the session's last frame. Its queued input goes with it.
void conn_detach(struct session *s, struct client *c, int reason, uint16_t code, const char *text) {
  struct keep *k = s->keep;
  size_t rest_len;
  const unsigned char *rest = remainder_of(c, &rest_len);
  control_send_detached(s, c->conn, reason, code, rest, rest_len, text);
  k->bytes_in += c->bytes_in;
  k->bytes_out += c->bytes_out;
  if (k->controller == c) k->controller = NULL;
  for (int i = 0; i < MAX_CONNS; i++)
    if (k->conns[i] == c) k->conns[i] = NULL;
  close(c->fd);
  c->fd = -1;
  c->ring_len = 0;
  if (c->conn != 0) free(c); // conn 0 is main()'s
}
