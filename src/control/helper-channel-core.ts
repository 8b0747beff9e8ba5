// The worker↔session-helper control channel's constants, its error and its text rules, which the
// dialects' messages share (helper-channel.ts: dialect 2's messages and the decoder; helper-keep.ts:
// dialect 3's, kept sessions). native/session/control.h mirrors the constants.
export const HelperMessageType = {
  GO: 0x01, // worker → helper: the client socket's write side is the helper's; a payload is the STARTED frame it writes first
  TERMINATE: 0x02, // worker → helper: end at a frame boundary, report "terminated"
  KILL: 0x03, // worker → helper: STOP's last step, SIGKILL every other process of the session's cgroup
  ENV: 0x04, // worker → helper: the program's environment ("NAME=value\0" each), once, before the fork
  ATTACH: 0x05, // worker → helper, dialect 3: a connection to a kept session (its fd rides on the first byte, SCM_RIGHTS)
  QUERY: 0x06, // worker → helper, dialect 3: the helper answers with one STATE (empty)
  RENDEZVOUS: 0x07, // worker → helper, dialect 4: a listening socket (SCM_RIGHTS) and the supervisor's cgroup path: the session outlives its worker
  CLAIM: 0x08, // worker → helper, dialect 5 (--warm): a START drew this warm helper (empty); it answers CLAIMED
  LAUNCH: 0x09, // worker → helper, dialect 5 (--warm), after CLAIMED: a fresh helper's arguments ("ARG\0" each); the START directory and the client connection ride on its first byte
  HELLO: 0x40, // helper → worker: its dialect (u16), the first message on the channel; dialect 1 helpers send none
  LOG: 0x41, // helper → worker: priority (sd-daemon) and text, for the journal
  STOP: 0x42, // helper → worker: the client sent STOP
  END: 0x43, // helper → worker: the one end report; the helper writes nothing to the client after it
  PID: 0x44, // helper → worker: the program's pid (u32), once, right after the fork, before the helper writes anything
  FIGURES: 0x45, // helper → worker: its cgroup's figures (u64 each, FIGURE_NAMES' order), once, right before END
  DETACHED: 0x46, // helper → worker, dialect 3: the helper writes nothing more to that connection; remainder, then ERROR
  STATE: 0x47, // helper → worker, dialect 3: the ring's offsets and the roles, only in answer to a QUERY
  PROGRAM_ENDED: 0x48, // helper → worker, dialect 3: the program's wait status, once, in a kept session
  CLAIMED: 0x49, // helper → worker, dialect 5: the answer to CLAIM (empty); read by the warm unit alone (warm-unit.ts), never by the session's decoder
} as const;

/**
 * The channel's message set, as the helper names it in HELLO, so a worker of a later release tells
 * what a live helper of an earlier one speaks (an upgrade meets helpers started before it):
 * 1: the set before HELLO (the helper sent none); 2: HELLO, and a helper that ends the program itself
 * (hang-up, SIGTERM, SIGKILL of the unit's processes after --stop-timeout-sec) when it drives the end;
 * 3: kept sessions (--keep): ATTACH and QUERY to it, DETACHED, STATE and PROGRAM_ENDED from it;
 * 4: RENDEZVOUS: a kept session outlives its worker, and the next worker reaches it on that socket;
 * 5: warm helpers (--warm): CLAIM and LAUNCH to it, CLAIMED from it, before its session's first message.
 */
export const HELPER_DIALECT = 5;

/** The oldest dialect this worker drives a kept session's helper in: 5 only adds what precedes a session. */
export const KEPT_DIALECT = 4;

/** FIGURES' fields in wire order, named as the systemd properties they stand for (native/session/figures.c);
 * 2^64-1 is "unavailable", as systemd marks it. */
export const FIGURE_NAMES = ['CPUUsageNSec', 'MemoryPeak', 'MemoryCurrent', 'TasksCurrent', 'IOReadBytes', 'IOWriteBytes'] as const;
export type FigureName = (typeof FIGURE_NAMES)[number];

/** The kernel's largest pid_max (PID_MAX_LIMIT, include/linux/threads.h): no pid is above it. */
export const PID_MAX_LIMIT = 4 * 1024 * 1024;

/** How the data phase ended, as the helper reports it (the byte on the wire in brackets). */
export const EndReasonCode = {
  exit: 1, // the program ended and all its output was sent
  stop: 2, // the client sent STOP; the program's last output was sent
  'client-gone': 3, // the client closed or reset its connection
  flow: 4, // output waits, the client has credit, but it did not read for the write timeout
  protocol: 5, // the client broke the protocol (code and text say how)
  terminated: 6, // the worker asked (TERMINATE)
  internal: 7, // the helper failed
} as const;
export type HelperEndReason = keyof typeof EndReasonCode;

/** Why a kept session's connection left the helper (DETACHED's reason byte; the END reasons where they agree). */
export const DetachReasonCode = {
  'client-gone': 3, // the connection closed or reset: nothing to write to it
  flow: 4, // it had credit and did not read for the write timeout, or (an observer) the ring wrapped past it
  protocol: 5, // it broke the protocol, or sent what only the controller may (NOT_CONTROLLER)
  refused: 8, // the ATTACH was refused (BAD_OFFSET, OBSERVER_LIMIT, SESSION_STATE); nothing was written to it
  ending: 9, // the session ends: the worker keeps the connection for the last frame (after the remainder)
} as const;
export type DetachReason = keyof typeof DetachReasonCode;

/** ATTACH's role byte, as the client's ATTACH names it (docs/protocol.md "Version 3"). */
export const AttachRole = { control: 1, observe: 2 } as const;
export type AttachRoleName = keyof typeof AttachRole;

export const HelperLimits = {
  HEADER_SIZE: 5,
  /** HELLO: the dialect, u16. */
  HELLO_SIZE: 2,
  /** END: reason u8, code u16, bytes in u64, bytes out u64, remainder length u32. */
  END_FIXED_SIZE: 23,
  FIGURES_SIZE: 8 * 6,
  /** The rest of one frame at most: a header and the largest payload (a version 2 STARTED's). */
  MAX_REMAINDER: 5 + 65536,
  MAX_REPORT_TEXT: 1024,
  MAX_LOG_TEXT: 1024,
  /** LOG messages one session's helper sends at most. */
  MAX_LOGS: 64,
  MAX_CONTROL_PAYLOAD: 23 + 5 + 65536 + 1024,
  /** ENV: the client's MAX_ENVC (128) and TERM, which the worker always sets. */
  MAX_ENV_ENTRIES: 128 + 1,
  /** ENV: the START frame's payload limit; the client's entries came in one START. */
  MAX_ENV_PAYLOAD: 65536,
  /** ATTACH: conn u8, role u8, fromOffset u64, rows u16, cols u16. */
  ATTACH_SIZE: 14,
  /** RENDEZVOUS: the supervisor's cgroup path (its payload), at most this many bytes. */
  MAX_RENDEZVOUS_CGROUP: 1024,
  /** DETACHED: conn u8, reason u8, code u16, remainder length u32, remainder, text. */
  DETACHED_FIXED_SIZE: 8,
  /** STATE: oldest u64, next u64, dropped u64, controller u8, observers u8, generation u32, programDone u8, waitStatus i32. */
  STATE_SIZE: 35,
  /** PROGRAM_ENDED: the wait status, i32. */
  PROGRAM_ENDED_SIZE: 4,
  /** STATE's controller when there is none. */
  NO_CONTROLLER: 255,
  /** LAUNCH: a fresh helper's arguments, START's payload at most and room for the options. */
  MAX_LAUNCH_PAYLOAD: 65536 + 512,
  MAX_LAUNCH_ARGS: 1024,
  /** QUERY messages the worker may have outstanding at once (each is answered by one STATE). */
  MAX_QUERIES: 16,
} as const;

/** Signals a client may send to its session's foreground process group (HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP WINCH). */
export const ALLOWED_SIGNALS: ReadonlySet<number> = new Set([1, 2, 3, 9, 10, 12, 15, 18, 19, 20, 28]);

export class HelperChannelError extends Error {
  readonly code = 'HELPER_CHANNEL';
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function channelText(bytes: Buffer, max: number, what: string): string {
  if (bytes.length > max) throw new HelperChannelError(`${what} of ${bytes.length} bytes exceeds ${max}`);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new HelperChannelError(`${what} is not UTF-8`);
  }
}

/** C0, DEL and C1 controls: the helper's texts are one-line diagnostics (vsnprintf of fixed formats and
 * strerror), never holding one. END text reaches the client's ERROR and root's journal unquoted, where a
 * line break starts an entry of its own (log.ts writes one per line). */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

export function channelLine(value: string, what: string): string {
  if (CONTROL_CHARACTER.test(value)) throw new HelperChannelError(`${what} holds a control character`);
  return value;
}

