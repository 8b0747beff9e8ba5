// A kept session (--keep, docs/protocol.md "Version 3"): the terminal always drains into a ring of
// retained output with absolute offsets, and any number of connections, up to a fixed bound, read
// from it each at its own cursor and pace (credit). One of them may be the controller: its input,
// resizes and signals reach the program; the others observe. A connection's faults end that
// connection (DETACHED to the worker), never the session; with none left the session runs on.
// Everything here is bounded: the ring's size is fixed at start, the table of connections too.
#ifndef OPENCODE_PTY_SESSION_KEEP_H
#define OPENCODE_PTY_SESSION_KEEP_H

#include "helper.h"

enum keep_limits {
  MAX_CONNS = 32,        // connections attached at once, demoted controllers beyond the observer cap included
  MAX_OBSERVERS = 16,    // --max-observers at most
  MIN_RETAIN = 4096,     // --retain-bytes, as START's retainBytes
  MAX_RETAIN = 64 << 20, // MAX_RETAINED_BYTES
  RING_TURN = 256 << 10, // terminal bytes taken into the ring per turn, so the connections get theirs between
};

// Retained output: bytes [oldest, next) are held, byte n at data[n % size].
struct ring {
  unsigned char *data;
  uint64_t size;
  uint64_t next;
};

struct keep {
  struct ring ring;
  struct client *conns[MAX_CONNS]; // attached connections; NULL: a free slot
  struct client *controller;       // NULL: nobody controls
  uint32_t generation;
  unsigned max_observers;
  uint64_t session_id;
  uint8_t used[256 / 8];  // conn numbers attached now (freed when their DETACHED is sent)
  bool program_ended_sent;
  bool idle_after_exit;   // the program is done and the terminal had nothing more this turn
  uint64_t bytes_in, bytes_out; // of the connections let go
  const struct client *first;   // conn 0, attached or not: GO (its STARTED) ends the session's start
  unsigned version;             // every connection speaks the START connection's version
  int write_timeout_ms;
};

// ring.c
bool ring_init(struct ring *r, uint64_t size);
uint64_t ring_oldest(const struct ring *r);
size_t ring_fill(struct session *s, struct ring *r, bool *idle);
void ring_copy(const struct ring *r, uint64_t from, unsigned char *to, size_t len);

// keep-conns.c
void keep_adopt(struct session *s, struct client *c0);
void conn_pump(struct session *s, struct client *c, bool *blocked);
void conn_detach(struct session *s, struct client *c, int reason, uint16_t code, const char *text);
bool conn_drained(const struct session *s, const struct client *c);
void control_send_detached(struct session *s, uint8_t conn, int reason, uint16_t code, const unsigned char *rest, size_t rest_len, const char *text);
unsigned keep_observers(const struct keep *k);

// keep-rendezvous.c
void keep_orphaned(struct session *s);
void keep_accept(struct session *s);

// keep-relay.c
struct keep *keep_new(uint64_t retain, unsigned max_observers, uint64_t session_id);
_Noreturn void keep_relay(struct session *s, struct client *c0, int sigfd);

#endif
