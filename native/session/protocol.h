// Wire constants of the opencode-pty protocol as the session helper needs them (docs/protocol.md).
// They mirror src/protocol/constants.ts; test/native/helper-constants.test.ts fails on any difference.
#ifndef OPENCODE_PTY_SESSION_PROTOCOL_H
#define OPENCODE_PTY_SESSION_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>

enum frame_type {
  FRAME_HELLO = 0x01,
  FRAME_WELCOME = 0x02,
  FRAME_START = 0x03,
  FRAME_STARTED = 0x04,
  FRAME_INPUT = 0x05,
  FRAME_OUTPUT = 0x06,
  FRAME_RESIZE = 0x07,
  FRAME_SIGNAL = 0x08,
  FRAME_STOP = 0x09,
  FRAME_STOPPED = 0x0a,
  FRAME_EXIT = 0x0b,
  FRAME_ERROR = 0x0c,
  FRAME_CREDIT = 0x0d,
  // Version 2 only (docs/protocol.md "Version 2"): the version 1 rule table does not know it.
  FRAME_END_INPUT = 0x0e,
};

enum limits {
  HEADER_SIZE = 5,
  MAX_FRAME_PAYLOAD = 65536,
  MAX_IO_PAYLOAD = 32768,
  MAX_UNIT_NAME = 255,
  MAX_RESULT = 255,
  INITIAL_WINDOW = 262144,
  MAX_WINDOW = 16777216,
  MAX_SIGNAL = 64,
};

enum error_code {
  ERR_PROTOCOL = 1,
  ERR_VERSION = 2,
  ERR_AUTHENTICATION = 3,
  ERR_ADMISSION = 4,
  ERR_SESSION_LIMIT = 5,
  ERR_HANDSHAKE_TIMEOUT = 6,
  ERR_BAD_START = 7,
  ERR_START_FAILED = 8,
  ERR_FLOW = 9,
  ERR_INTERNAL = 10,
  ERR_SHUTDOWN = 11,
};

// What the header alone decides, per frame type and protocol version (docs/protocol.md "Frame
// header"): who may send it and its payload length range. A later version is one more table.
struct frame_rule {
  bool known;
  bool from_client;
  uint32_t min_length, max_length;
};

// NULL for a version the helper does not speak.
const struct frame_rule *frame_rules(unsigned version);

#endif
