// Feeds the session helper's decoder (native/session/decode.c) in-process: stdin's bytes whole, then
// cut at every offset, then one byte at a time; prints the log of the whole feed (decoder-events.c)
// and fails (exit 3) if any other feed logs anything else. argv[1]: the protocol version; argv[2],
// optional: the client's INPUT credit (INITIAL_WINDOW when absent, or "-"); argv[3], optional: "observe"
// for a kept session's observer.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder-events.h"

static struct session s;
static struct client c;
static unsigned char input[1 << 20];
static char whole[sizeof events.log];

static bool observer;

static void start(unsigned version, long credit) {
  events_reset(&s, &c, version);
  if (credit >= 0) c.recv_remaining = (uint32_t)credit;
  c.role = observer ? ROLE_OBSERVE : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  unsigned version = (unsigned)atoi(argv[1]);
  long credit = argc > 2 && strcmp(argv[2], "-") != 0 ? atol(argv[2]) : -1;
  observer = argc > 3 && strcmp(argv[3], "observe") == 0;
  if (!frame_rules(version)) return 2;
  size_t len = fread(input, 1, sizeof input, stdin);
  start(version, credit);
  events_feed(&s, &c, input, len, NULL, 0);
  memcpy(whole, events.log, events.len + 1);
  fputs(whole, stdout);
  for (size_t cut = 1; cut < len; cut++) {
    start(version, credit);
    events_feed(&s, &c, input, len, &cut, 1);
    if (strcmp(events.log, whole) != 0) {
      fprintf(stderr, "cut at %zu logs:\n%s", cut, events.log);
      return 3;
    }
  }
  static size_t every[sizeof input];
  for (size_t i = 0; i + 1 < len; i++) every[i] = i + 1;
  start(version, credit);
  events_feed(&s, &c, input, len, every, len > 0 ? len - 1 : 0);
  if (strcmp(events.log, whole) != 0) {
    fprintf(stderr, "one byte at a time logs:\n%s", events.log);
    return 3;
  }
  return 0;
}
