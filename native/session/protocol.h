// Wire constants of the opencode-pty protocol as the session helper needs them (docs/protocol.md).
// Their values come from src/protocol/ alone: build.mjs generates wire.h from it
// (scripts/helper-wire.ts), the frame types, limits, error codes and the per-version rule tables.
#ifndef OPENCODE_PTY_SESSION_PROTOCOL_H
#define OPENCODE_PTY_SESSION_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>

// What the header alone decides, per frame type and protocol version (docs/protocol.md "Frame
// header"): who may send it and its payload length range.
struct frame_rule {
  bool known;
  bool from_client;
  uint32_t min_length, max_length;
};

#include "wire.h"

// NULL for a version the helper does not speak.
const struct frame_rule *frame_rules(unsigned version);
const char *frame_name(uint8_t type);

#endif
