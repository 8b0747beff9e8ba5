// The control channel between the worker and the session helper (the helper's fd 2 at start): frames
// of 1 byte type, 4 bytes payload length (big-endian), payload. It mirrors src/control/helper-channel.ts;
// test/native/helper-constants.test.ts fails on any difference.
#ifndef OPENCODE_PTY_SESSION_CONTROL_H
#define OPENCODE_PTY_SESSION_CONTROL_H

#include <stddef.h>
#include <stdint.h>

enum control_type {
  // worker -> helper, all empty but ENV and GO
  CONTROL_GO = 0x01,        // the client socket's write side is the helper's now; its payload is the
                            // STARTED frame to write first, its pids filled in here
  CONTROL_TERMINATE = 0x02, // end at a frame boundary and report "terminated"
  CONTROL_KILL = 0x03,      // STOP's last step: SIGKILL every other process of the session's cgroup
  CONTROL_ENV = 0x04,       // with --env-from-control, the first message: "NAME=value\0" each, for execve only
  CONTROL_ATTACH = 0x05,    // dialect 3 (--keep): conn u8, role u8, fromOffset u64, rows u16, cols u16; the
                            // connection's fd rides on its first byte (SCM_RIGHTS)
  CONTROL_QUERY = 0x06,     // dialect 3 (--keep): empty; answered by one STATE
  CONTROL_RENDEZVOUS = 0x07, // dialect 4 (--keep): the supervisor's cgroup path; a listening socket rides on its
                             // first byte (SCM_RIGHTS): with it, the worker's end of the channel no longer ends the
                             // session, and a uid-0 peer of that cgroup accepted there is the next control channel
                             // (keep-rendezvous.c, docs/architecture.md)
  CONTROL_CLAIM = 0x08,     // dialect 5 (--warm): empty; a START drew this warm helper, which answers CLAIMED at once
  CONTROL_LAUNCH = 0x09,    // dialect 5 (--warm), after CLAIMED: the session's arguments as a fresh unit's helper gets
                            // them ("ARG\0" each); the START directory and the client connection ride on its first
                            // byte (SCM_RIGHTS, in that order); ENV and GO follow as for a fresh unit (warm.c)
  // helper -> worker
  CONTROL_HELLO = 0x40,     // the helper's dialect u16, its first message on every channel (dialect 1 sent none)
  CONTROL_LOG = 0x41,       // priority u8 (sd-daemon), text
  CONTROL_STOP = 0x42,      // the client sent STOP (empty); the worker stops the session's processes
  CONTROL_END = 0x43,       // the end report; the helper writes nothing to the client after it
  CONTROL_PID = 0x44,       // the program's pid u32, once, right after the fork (before the helper writes anything)
  CONTROL_FIGURES = 0x45,   // the session cgroup's figures, u64 each in enum figure's order, once, right before END
  CONTROL_DETACHED = 0x46,  // dialect 3: conn u8, reason u8, code u16, remainder length u32, remainder, text;
                            // nothing more is written to that connection
  CONTROL_STATE = 0x47,     // dialect 3: the ring's offsets and the roles, in answer to a QUERY
  CONTROL_PROGRAM_ENDED = 0x48, // dialect 3: the program's wait status i32, once, in a kept session
  CONTROL_CLAIMED = 0x49,   // dialect 5: empty, the answer to CLAIM: the warm helper runs and reads its channel
};

// DETACHED's reasons: the END reasons where they agree.
enum detach_reason {
  DETACH_CLIENT_GONE = 3, // the connection closed or reset
  DETACH_FLOW = 4,        // it had credit and did not read for the write timeout, or (an observer) the ring passed it
  DETACH_PROTOCOL = 5,    // it broke the protocol, or sent what only the controller may
  DETACH_REFUSED = 8,     // the ATTACH was refused: nothing was written to it
  DETACH_ENDING = 9,      // the session ends: the worker writes its last frame after the remainder
};

// ATTACH's role byte (the client's ATTACH: docs/protocol.md "Version 3").
enum attach_role {
  ROLE_CONTROL = 1,
  ROLE_OBSERVE = 2,
};

// FIGURES: what systemd would report as the unit's properties, from the same cgroup files.
enum figure {
  FIGURE_CPU_NSEC = 0,       // CPUUsageNSec
  FIGURE_MEMORY_PEAK = 1,    // MemoryPeak
  FIGURE_MEMORY_CURRENT = 2, // MemoryCurrent
  FIGURE_TASKS = 3,          // TasksCurrent
  FIGURE_IO_READ = 4,        // IOReadBytes
  FIGURE_IO_WRITE = 5,       // IOWriteBytes
  FIGURE_COUNT = 6,
};
#define FIGURE_UNAVAILABLE UINT64_MAX // as systemd marks a figure it has not

enum end_reason {
  END_EXIT = 1,        // the program ended and all its output was sent
  END_STOP = 2,        // the client sent STOP; the program's last output was sent
  END_CLIENT_GONE = 3, // the client closed or reset its connection
  END_FLOW = 4,        // output waits, the client has credit, but it did not read for the write timeout
  END_PROTOCOL = 5,    // the client broke the protocol: code and text say how
  END_TERMINATED = 6,  // the worker asked (CONTROL_TERMINATE)
  END_INTERNAL = 7,    // the helper failed
};

// The control channel's message set: 1 is the set before HELLO; 2 adds HELLO, and a helper that ends
// the program itself when it drives the end (hang-up, SIGTERM, SIGKILL: docs/architecture.md); 3 adds
// kept sessions (--keep: ATTACH, QUERY, DETACHED, STATE, PROGRAM_ENDED); 4 adds RENDEZVOUS: a kept session
// outlives its worker and is reached again by the next one; 5 adds warm helpers (--warm: CLAIM, LAUNCH, CLAIMED),
// started before their session's START arrives.
enum { CONTROL_DIALECT = 5 };

enum control_limits {
  CONTROL_HEADER_SIZE = 5,
  HELLO_SIZE = 2,
  // END: reason u8, code u16, bytes in u64, bytes out u64, remainder length u32, remainder, text.
  END_FIXED_SIZE = 23,
  FIGURES_SIZE = 48, // 8 * FIGURE_COUNT
  MAX_REMAINDER = 5 + 65536, // the rest of any frame the helper writes: STARTED's payload is the largest
  MAX_REPORT_TEXT = 1024,
  MAX_LOG_TEXT = 1024,
  MAX_LOGS = 64,
  MAX_CONTROL_PAYLOAD = END_FIXED_SIZE + MAX_REMAINDER + MAX_REPORT_TEXT,
  MAX_ENV_ENTRIES = 128 + 1,  // the client's MAX_ENVC and the TERM the worker always sets
  MAX_ENV_PAYLOAD = 65536,    // START's payload limit: the client's entries came in one START
  ATTACH_SIZE = 14,
  // RENDEZVOUS: the cgroup (its path under the cgroup root) whose processes alone may be the next channel.
  MAX_RENDEZVOUS_CGROUP = 1024,
  DETACHED_FIXED_SIZE = 8,
  STATE_SIZE = 35,            // 3 * u64, u8, u8, u32, u8, i32
  PROGRAM_ENDED_SIZE = 4,
  NO_CONTROLLER = 255,        // STATE's controller when there is none
  // LAUNCH: the arguments of a fresh unit's helper (options, ROWS, COLS, the program's argv: START's payload at most).
  MAX_LAUNCH_PAYLOAD = 65536 + 512,
  MAX_LAUNCH_ARGS = 1024,
};

// Signals a client may send (HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP WINCH).
#define ALLOWED_SIGNALS {1, 2, 3, 9, 10, 12, 15, 18, 19, 20, 28}

#endif
