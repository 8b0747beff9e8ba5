// A fuzz target for the session helper's decoder (native/session/decode.c). The property: whatever the
// bytes, decoding never touches memory it should not (AddressSanitizer), never overflows or shifts out
// of range (UBSan), and logs the same events however the bytes are cut. The first byte picks the
// protocol version, the next two a cut. Built with -DWITH_LIBFUZZER it is a libFuzzer target (clang
// -fsanitize=fuzzer); without, main() runs a fixed number of generated inputs (random bytes, and
// frame sequences built to pass the header checks, then mutated) within a time budget.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder-events.h"

static struct session s;
static struct client c;
static char whole[sizeof events.log];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  unsigned version = 1 + (data[0] & 0x7f) % WIRE_VERSIONS;
  bool observer = data[0] & 0x80; // a kept session's observer: everything but CREDIT is refused NOT_CONTROLLER
  size_t cut = ((size_t)data[1] << 8 | data[2]);
  data += 3, size -= 3;
  if (size > 0) cut %= size;
  events_reset(&s, &c, version);
  c.role = observer ? ROLE_OBSERVE : 0;
  events_feed(&s, &c, data, size, NULL, 0);
  memcpy(whole, events.log, events.len + 1);
  events_reset(&s, &c, version);
  c.role = observer ? ROLE_OBSERVE : 0;
  events_feed(&s, &c, data, size, &cut, 1);
  if (strcmp(whole, events.log) != 0) {
    fprintf(stderr, "version %u, cut at %zu: the logs differ\n--- whole\n%s--- cut\n%s", version, cut, whole, events.log);
    abort();
  }
  return 0;
}

#ifndef WITH_LIBFUZZER
static uint64_t state = 0x9e3779b97f4a7c15u;

static uint64_t next(void) { // xorshift64*: the same inputs every run
  state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
  return state * 2685821657736338717u;
}

static size_t below(size_t n) {
  return n ? (size_t)(next() % n) : 0;
}

// A frame the client could send, or nearly: a type from the client's set (or any), a length in or
// near its range, and a payload of plausible or random bytes.
static size_t frame(uint8_t *out, size_t room) {
  static const uint8_t types[] = {FRAME_INPUT, FRAME_RESIZE, FRAME_SIGNAL, FRAME_STOP, FRAME_CREDIT, FRAME_END_INPUT, FRAME_LIST, FRAME_ATTACH, FRAME_STOP_SESSION};
  uint8_t type = below(8) == 0 ? (uint8_t)next() : types[below(sizeof types)];
  uint32_t len;
  switch (type) {
  case FRAME_INPUT: len = 1 + (uint32_t)below(64); break;
  case FRAME_RESIZE: case FRAME_CREDIT: len = 4; break;
  case FRAME_SIGNAL: len = 1; break;
  case FRAME_ATTACH: len = 21; break;
  default: len = 0;
  }
  if (below(16) == 0) len = (uint32_t)next(); // a length no rule allows
  size_t body = len < 256 ? len : 0;
  if (HEADER_SIZE + body > room) return 0;
  out[0] = type;
  out[1] = (uint8_t)(len >> 24), out[2] = (uint8_t)(len >> 16), out[3] = (uint8_t)(len >> 8), out[4] = (uint8_t)len;
  for (size_t i = 0; i < body; i++) out[HEADER_SIZE + i] = (uint8_t)(below(4) == 0 ? next() : below(32));
  if (type == FRAME_SIGNAL && body == 1 && below(2)) out[HEADER_SIZE] = (uint8_t[]){1, 2, 15, 28, 0, 65, 13}[below(7)];
  return HEADER_SIZE + body;
}

int main(int argc, char **argv) {
  long runs = argc > 1 ? atol(argv[1]) : 200000;
  double budget = argc > 2 ? atof(argv[2]) : 5.0;
  static uint8_t input[4096];
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long done = 0;
  for (; done < runs; done++) {
    if (done % 1024 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > budget) break;
    }
    size_t size = 3;
    input[0] = (uint8_t)next(), input[1] = (uint8_t)next(), input[2] = (uint8_t)next();
    if (below(4) == 0) {
      size += below(sizeof input - 3);
      for (size_t i = 3; i < size; i++) input[i] = (uint8_t)next();
    } else {
      size_t frames = 1 + below(24), n;
      for (size_t i = 0; i < frames && (n = frame(input + size, sizeof input - size)) > 0; i++) size += n;
      for (size_t flips = below(3); flips > 0 && size > 3; flips--) input[3 + below(size - 3)] ^= (uint8_t)(1u << below(8));
    }
    LLVMFuzzerTestOneInput(input, size);
  }
  printf("%ld inputs\n", done);
  return 0;
}
#endif
