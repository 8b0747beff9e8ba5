// The kept session's ring of retained output: the terminal is read into it whatever the connections
// do, so the program is never blocked by a reader; the oldest bytes are overwritten once it is full.
// Allocated by the helper, it is the session's user's memory, counted by the unit's MemoryMax=.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keep.h"

bool ring_init(struct ring *r, uint64_t size) {
  r->data = malloc(size);
  r->size = size;
  r->next = 0;
  return r->data != NULL;
}

uint64_t ring_oldest(const struct ring *r) {
  return r->next > r->size ? r->next - r->size : 0;
}

// What the terminal has now, up to RING_TURN bytes; *idle: it had nothing more (EAGAIN). Nobody holds
// the terminal any more (EIO): master_eof.
size_t ring_fill(struct session *s, struct ring *r, bool *idle) {
  size_t total = 0;
  while (total < RING_TURN && !s->master_eof) {
    size_t at = (size_t)(r->next % r->size), room = (size_t)(r->size - at);
    if (room > MAX_IO_PAYLOAD) room = MAX_IO_PAYLOAD;
    ssize_t n = read(s->master, r->data + at, room);
    if (n > 0) {
      r->next += (uint64_t)n;
      total += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      *idle = true;
      break;
    }
    s->master_eof = true;
  }
  return total;
}

// len bytes from offset `from`, which the caller keeps within [oldest, next).
void ring_copy(const struct ring *r, uint64_t from, unsigned char *to, size_t len) {
  size_t at = (size_t)(from % r->size), first = (size_t)(r->size - at) < len ? (size_t)(r->size - at) : len;
  memcpy(to, r->data + at, first);
  memcpy(to + first, r->data, len - first);
}
