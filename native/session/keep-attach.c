// ATTACH from the worker (a connection to a kept session, its fd passed with the message) and QUERY:
// what the helper checks, what the new connection is written first (ATTACHED, then TRUNCATED when the
// ring no longer holds what it asked for), and the controller's hand-over (CONTROLLER_CHANGED to the
// others). A refused ATTACH is written nothing: DETACHED(refused) tells the worker the code.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "keep.h"

static const uint64_t FROM_NOW = UINT64_MAX;
static const uint64_t OFFSET_LIMIT = (uint64_t)1 << 63;

static bool used(const struct keep *k, uint8_t conn) {
  return k->used[conn / 8] & (1u << (conn % 8));
}

// ATTACHED (id u64, role u8, generation u32, oldest u64, next u64, programPid u32, mainPid u32,
// unitLen u16, unit), then TRUNCATED(oldest, dropped) when `from` is older than the ring holds.
static void write_greeting(struct session *s, struct client *c, uint64_t from) {
  struct keep *k = s->keep;
  uint64_t oldest = ring_oldest(&k->ring), next = k->ring.next;
  size_t unit_len = strlen(s->unit), len = 8 + 1 + 4 + 8 + 8 + 4 + 4 + 2 + unit_len;
  unsigned char *p = c->started;
  p[0] = FRAME_ATTACHED;
  put_be32(p + 1, (uint32_t)len);
  p += HEADER_SIZE;
  put_be64(p, k->session_id);
  p[8] = c->role;
  put_be32(p + 9, k->generation);
  put_be64(p + 13, oldest);
  put_be64(p + 21, next);
  put_be32(p + 29, (uint32_t)s->child.pid);
  put_be32(p + 33, (uint32_t)getpid());
  put_be16(p + 37, (uint32_t)unit_len);
  memcpy(p + 39, s->unit, unit_len);
  c->started_len = HEADER_SIZE + len;
  c->started_off = 0;
  c->cursor = from == FROM_NOW ? next : from;
  if (c->cursor < oldest) {
    p = c->started + c->started_len;
    p[0] = FRAME_TRUNCATED;
    put_be32(p + 1, 16);
    put_be64(p + HEADER_SIZE, oldest);
    put_be64(p + HEADER_SIZE + 8, oldest - c->cursor);
    c->started_len += HEADER_SIZE + 16;
    c->cursor = oldest;
  }
}

// The new controller takes over: the previous one observes from now on (its queued input is dropped,
// never applied), the terminal takes the new one's size, and every other connection is told.
static void hand_over(struct session *s, struct client *c, unsigned rows, unsigned cols) {
  struct keep *k = s->keep;
  k->generation++;
  if (k->controller) {
    k->controller->role = ROLE_OBSERVE;
    consume_input(k->controller, k->controller->ring_len);
    k->controller->ring_len = 0;
  }
  for (int i = 0; i < MAX_CONNS; i++)
    if (k->conns[i] && k->conns[i] != c) k->conns[i]->change_pending = true;
  k->controller = c;
  if (!s->master_eof) set_winsize(s, s->master, rows, cols);
}

// false: the worker broke the channel's rules (a conn attached now, or out of range, a role or size no ATTACH
// has); the fd is closed either way when it is not taken.
bool keep_attach(struct session *s, const unsigned char *payload, int fd) {
  struct keep *k = s->keep;
  const struct client *c0 = k->first;
  uint8_t conn = payload[0], role = payload[1];
  uint64_t from = (uint64_t)get_be32(payload + 2) << 32 | get_be32(payload + 6);
  unsigned rows = get_be16(payload + 10), cols = get_be16(payload + 12);
  if (conn == 0 || used(k, conn) || (role != ROLE_CONTROL && role != ROLE_OBSERVE) || rows == 0 || cols == 0) {
    close(fd);
    return false;
  }
  k->used[conn / 8] |= (uint8_t)(1u << (conn % 8));
  int slot = -1;
  for (int i = 1; i < MAX_CONNS && slot < 0; i++)
    if (!k->conns[i]) slot = i;
  uint16_t code = 0;
  const char *why = "";
  if (s->end.reason || !c0 || !c0->go) code = ERR_SESSION_STATE, why = "the session is starting or ending";
  else if (from != FROM_NOW && (from >= OFFSET_LIMIT || from > k->ring.next)) code = ERR_BAD_OFFSET, why = "the offset is past the session's next byte";
  else if (slot < 0 || (role == ROLE_OBSERVE && keep_observers(k) >= k->max_observers)) code = ERR_OBSERVER_LIMIT, why = "the session has as many observers as it takes";
  struct client *c = code ? NULL : calloc(1, sizeof *c);
  if (!c) {
    control_send_detached(s, conn, DETACH_REFUSED, code ? code : ERR_SESSION_STATE, NULL, 0, code ? why : "out of memory");
    close(fd);
    return true;
  }
  c->fd = fd;
  c->conn = conn;
  c->role = role;
  c->version = k->version;
  c->write_timeout_ms = k->write_timeout_ms;
  c->go = true;
  c->stall_since = -1;
  decoder_init(&c->dec, frame_rules(c->version));
  client_begin(c);
  if (role == ROLE_CONTROL) hand_over(s, c, rows, cols);
  write_greeting(s, c, from);
  k->conns[slot] = c;
  return true;
}

// STATE: oldest u64, next u64, dropped u64, controller u8, observers u8, generation u32, programDone u8, waitStatus i32.
void keep_send_state(struct session *s) {
  struct keep *k = s->keep;
  unsigned char p[STATE_SIZE];
  uint64_t oldest = ring_oldest(&k->ring);
  put_be64(p, oldest);
  put_be64(p + 8, k->ring.next);
  put_be64(p + 16, oldest);
  p[24] = k->controller ? k->controller->conn : NO_CONTROLLER;
  p[25] = (unsigned char)keep_observers(k);
  put_be32(p + 26, k->generation);
  p[30] = s->child.done;
  put_be32(p + 31, s->child.done ? (uint32_t)s->child.status : 0);
  control_send_message(&s->worker, CONTROL_STATE, p, sizeof p);
}
