// The log the decoder drivers compare (decoder-events.c).
#ifndef OPENCODE_PTY_TEST_DECODER_EVENTS_H
#define OPENCODE_PTY_TEST_DECODER_EVENTS_H

#include "../../native/session/helper.h"

struct events {
  char log[1 << 20];
  size_t len;
};
extern struct events events;

void events_reset(struct session *s, struct client *c, unsigned version);
void events_feed(struct session *s, struct client *c, const unsigned char *data, size_t len, const size_t *cuts, size_t ncuts);

#endif
