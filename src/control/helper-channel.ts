// The worker↔session-helper control channel (the helper's fd 2 at start; native/session/control.h):
// frames of 1 byte type, 4 bytes payload length (big-endian), payload. The helper runs as the client's
// user, so everything it sends is untrusted: known types and reasons only, bounded sizes, strict UTF-8.
import { ErrorCode } from '../protocol/index.ts';

export const HelperMessageType = {
  GO: 0x01, // worker → helper: the client socket's write side is the helper's; a payload is the STARTED frame it writes first
  TERMINATE: 0x02, // worker → helper: end at a frame boundary, report "terminated"
  KILL: 0x03, // worker → helper: STOP's last step, SIGKILL every other process of the session's cgroup
  ENV: 0x04, // worker → helper: the program's environment ("NAME=value\0" each), once, before the fork
  ATTACH: 0x05, // worker → helper, dialect 3: a connection to a kept session (its fd rides on the first byte, SCM_RIGHTS)
  QUERY: 0x06, // worker → helper, dialect 3: the helper answers with one STATE (empty)
  HELLO: 0x40, // helper → worker: its dialect (u16), the first message on the channel; dialect 1 helpers send none
  LOG: 0x41, // helper → worker: priority (sd-daemon) and text, for the journal
  STOP: 0x42, // helper → worker: the client sent STOP
  END: 0x43, // helper → worker: the one end report; the helper writes nothing to the client after it
  PID: 0x44, // helper → worker: the program's pid (u32), once, right after the fork, before the helper writes anything
  FIGURES: 0x45, // helper → worker: its cgroup's figures (u64 each, FIGURE_NAMES' order), once, right before END
  DETACHED: 0x46, // helper → worker, dialect 3: the helper writes nothing more to that connection; remainder, then ERROR
  STATE: 0x47, // helper → worker, dialect 3: the ring's offsets and the roles, only in answer to a QUERY
  PROGRAM_ENDED: 0x48, // helper → worker, dialect 3: the program's wait status, once, in a kept session
} as const;

/**
 * The channel's message set, as the helper names it in HELLO, so a worker of a later release tells
 * what a live helper of an earlier one speaks (an upgrade meets helpers started before it):
 * 1: the set before HELLO (the helper sent none); 2: HELLO, and a helper that ends the program itself
 * (hang-up, SIGTERM, SIGKILL of the unit's processes after --stop-timeout-sec) when it drives the end;
 * 3: kept sessions (--keep): ATTACH and QUERY to it, DETACHED, STATE and PROGRAM_ENDED from it.
 */
export const HELPER_DIALECT = 3;

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
  /** DETACHED: conn u8, reason u8, code u16, remainder length u32, remainder, text. */
  DETACHED_FIXED_SIZE: 8,
  /** STATE: oldest u64, next u64, dropped u64, controller u8, observers u8, generation u32, programDone u8, waitStatus i32. */
  STATE_SIZE: 35,
  /** PROGRAM_ENDED: the wait status, i32. */
  PROGRAM_ENDED_SIZE: 4,
  /** STATE's controller when there is none. */
  NO_CONTROLLER: 255,
  /** QUERY messages the worker may have outstanding at once (each is answered by one STATE). */
  MAX_QUERIES: 16,
} as const;

/** Signals a client may send to its session's foreground process group (HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP WINCH). */
export const ALLOWED_SIGNALS: ReadonlySet<number> = new Set([1, 2, 3, 9, 10, 12, 15, 18, 19, 20, 28]);

/** The codes a helper may ask the client to be sent for a protocol failure. */
const PROTOCOL_CODES: ReadonlySet<number> = new Set([ErrorCode.PROTOCOL, ErrorCode.FLOW]);

/** DETACHED: the ERROR codes each reason may carry (0: none). */
const DETACH_CODES: Record<DetachReason, ReadonlySet<number>> = {
  'client-gone': new Set([0]),
  flow: new Set([ErrorCode.FLOW]),
  protocol: new Set([ErrorCode.PROTOCOL, ErrorCode.FLOW, ErrorCode.NOT_CONTROLLER]),
  refused: new Set([ErrorCode.BAD_OFFSET, ErrorCode.OBSERVER_LIMIT, ErrorCode.SESSION_STATE]),
  ending: new Set([0]),
};

/** A connection the helper let go of (dialect 3). */
export interface DetachReport {
  conn: number;
  reason: DetachReason;
  /** The ERROR code the worker writes to the connection after the remainder; 0: none. */
  code: number;
  /** The unsent rest of the frame in progress on that connection. */
  remainder: Buffer;
  text: string;
}

/** STATE (dialect 3): the helper's view of its ring and roles; untrusted (the worker checks it against its own counts). */
export interface HelperState {
  oldest: bigint;
  next: bigint;
  dropped: bigint;
  /** The controller's conn, or undefined when there is none. */
  controller: number | undefined;
  observers: number;
  generation: number;
  programDone: boolean;
  /** The program's wait status once it is done; 0 before. */
  waitStatus: number;
}

export interface EndReport {
  reason: HelperEndReason;
  /** The wire ERROR code for `protocol` (PROTOCOL or FLOW); 0 otherwise. */
  code: number;
  bytesIn: bigint;
  bytesOut: bigint;
  /** The unsent rest of the frame in progress, written to the client before the last frame. */
  remainder: Buffer;
  text: string;
}

export type HelperMessage =
  /** The helper's dialect (HELPER_DIALECT), first of all; a helper that sends none speaks dialect 1. */
  | { type: 'hello'; dialect: number }
  | { type: 'log'; priority: number; text: string }
  | { type: 'stop' }
  | { type: 'end'; report: EndReport }
  /** Untrusted like the rest: only its range is checked here (the session's cgroup is the worker's to check). */
  | { type: 'pid'; pid: number }
  /** The helper's own cgroup figures; bounded on the way to the client (end-record.ts). */
  | { type: 'figures'; figures: Record<FigureName, bigint> }
  /** Dialect 3: the helper writes nothing more to `conn`; at most one per conn the worker attached (and conn 0). */
  | { type: 'detached'; report: DetachReport }
  /** Dialect 3: the answer to one QUERY. */
  | { type: 'state'; state: HelperState }
  /** Dialect 3: the program ended (its wait status), once, in a kept session. */
  | { type: 'program-ended'; waitStatus: number };

export class HelperChannelError extends Error {
  readonly code = 'HELPER_CHANNEL';
}

export function encodeCommand(command: 'terminate' | 'kill'): Buffer {
  const type = { terminate: HelperMessageType.TERMINATE, kill: HelperMessageType.KILL }[command];
  return Buffer.from([type, 0, 0, 0, 0]);
}

/**
 * GO with the STARTED frame the helper writes first, its pids set by the helper (the program's, which
 * only it knows at once, and its own): sent before the unit starts, so the helper finds it queued.
 */
export function encodeGo(started: Buffer): Buffer {
  const header = Buffer.alloc(HelperLimits.HEADER_SIZE);
  header[0] = HelperMessageType.GO;
  header.writeUInt32BE(started.length, 1);
  return Buffer.concat([header, started]);
}

/**
 * ATTACH (dialect 3): the connection `conn` (1..255, never reused in a session) joins the kept session
 * with `role`, from `fromOffset` (Limits.FROM_NOW: from the next byte). The caller sends these bytes in
 * one write with exactly the connection's fd (SCM_RIGHTS rides on the first byte), and tells its
 * HelperDecoder (attached(conn)) so the helper's DETACHED for it is expected.
 */
export function encodeAttach(attach: { conn: number; role: AttachRoleName; fromOffset: bigint; rows: number; cols: number }): Buffer {
  const { conn, role, fromOffset, rows, cols } = attach;
  if (!Number.isInteger(conn) || conn < 1 || conn > 255) throw new HelperChannelError(`ATTACH conn ${conn} is outside 1..255`);
  if (!(role in AttachRole)) throw new HelperChannelError(`ATTACH role ${String(role)}`);
  if (typeof fromOffset !== 'bigint' || fromOffset < 0n || fromOffset > 0xffff_ffff_ffff_ffffn) throw new HelperChannelError(`ATTACH offset ${String(fromOffset)} is not a u64`);
  for (const [name, value] of [['rows', rows], ['cols', cols]] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 65535) throw new HelperChannelError(`ATTACH ${name} ${value} is outside 1..65535`);
  }
  const message = Buffer.alloc(HelperLimits.HEADER_SIZE + HelperLimits.ATTACH_SIZE);
  message[0] = HelperMessageType.ATTACH;
  message.writeUInt32BE(HelperLimits.ATTACH_SIZE, 1);
  message[5] = conn;
  message[6] = AttachRole[role];
  message.writeBigUInt64BE(fromOffset, 7);
  message.writeUInt16BE(rows, 15);
  message.writeUInt16BE(cols, 17);
  return message;
}

/** QUERY (dialect 3): the helper answers with one STATE; tell the HelperDecoder (queried()) when it is sent. */
export function encodeQuery(): Buffer {
  return Buffer.from([HelperMessageType.QUERY, 0, 0, 0, 0]);
}

/** ENV: every entry "NAME=value" and a NUL, the form execve(2) takes; names and values without NUL or "=" in names. */
export function encodeEnv(environment: ReadonlyMap<string, string>): Buffer {
  if (environment.size > HelperLimits.MAX_ENV_ENTRIES) throw new HelperChannelError(`${environment.size} environment entries exceed ${HelperLimits.MAX_ENV_ENTRIES}`);
  const parts: Buffer[] = [];
  for (const [name, value] of environment) {
    if (name.length === 0 || name.includes('=') || name.includes('\0') || value.includes('\0')) {
      throw new HelperChannelError(`environment name ${JSON.stringify(name)} or its value cannot be passed`);
    }
    parts.push(Buffer.from(`${name}=${value}\0`, 'utf8'));
  }
  const payload = Buffer.concat(parts);
  if (payload.length > HelperLimits.MAX_ENV_PAYLOAD) throw new HelperChannelError(`an environment of ${payload.length} bytes exceeds ${HelperLimits.MAX_ENV_PAYLOAD}`);
  const header = Buffer.alloc(HelperLimits.HEADER_SIZE);
  header[0] = HelperMessageType.ENV;
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function text(bytes: Buffer, max: number, what: string): string {
  if (bytes.length > max) throw new HelperChannelError(`${what} of ${bytes.length} bytes exceeds ${max}`);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new HelperChannelError(`${what} is not UTF-8`);
  }
}

const REASONS = new Map<number, HelperEndReason>(Object.entries(EndReasonCode).map(([name, code]) => [code, name as HelperEndReason]));

export function parseEnd(payload: Buffer): EndReport {
  if (payload.length < HelperLimits.END_FIXED_SIZE) throw new HelperChannelError(`END of ${payload.length} bytes`);
  const reason = REASONS.get(payload[0]!);
  if (!reason) throw new HelperChannelError(`END with unknown reason ${payload[0]}`);
  const code = payload.readUInt16BE(1);
  if (reason === 'protocol' ? !PROTOCOL_CODES.has(code) : false) throw new HelperChannelError(`END protocol with code ${code}`);
  const length = payload.readUInt32BE(19);
  if (length > HelperLimits.MAX_REMAINDER || HelperLimits.END_FIXED_SIZE + length > payload.length) {
    throw new HelperChannelError(`END remainder of ${length} bytes`);
  }
  const remainder = Buffer.from(payload.subarray(HelperLimits.END_FIXED_SIZE, HelperLimits.END_FIXED_SIZE + length));
  return {
    reason,
    code,
    bytesIn: payload.readBigUInt64BE(3),
    bytesOut: payload.readBigUInt64BE(11),
    remainder,
    text: oneLine(text(payload.subarray(HelperLimits.END_FIXED_SIZE + length), HelperLimits.MAX_REPORT_TEXT, 'END text'), 'END text'),
  };
}

/** C0, DEL and C1 controls: the helper's texts are one-line diagnostics (vsnprintf of fixed formats and
 * strerror), never holding one. END text reaches the client's ERROR and root's journal unquoted, where a
 * line break starts an entry of its own (log.ts writes one per line). */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

function oneLine(value: string, what: string): string {
  if (CONTROL_CHARACTER.test(value)) throw new HelperChannelError(`${what} holds a control character`);
  return value;
}

const DETACH_REASONS = new Map<number, DetachReason>(Object.entries(DetachReasonCode).map(([name, code]) => [code, name as DetachReason]));

export function parseDetached(payload: Buffer): DetachReport {
  const fixed = HelperLimits.DETACHED_FIXED_SIZE;
  if (payload.length < fixed) throw new HelperChannelError(`DETACHED of ${payload.length} bytes`);
  const reason = DETACH_REASONS.get(payload[1]!);
  if (!reason) throw new HelperChannelError(`DETACHED with unknown reason ${payload[1]}`);
  const code = payload.readUInt16BE(2);
  if (!DETACH_CODES[reason].has(code)) throw new HelperChannelError(`DETACHED ${reason} with code ${code}`);
  const length = payload.readUInt32BE(4);
  if (length > HelperLimits.MAX_REMAINDER || fixed + length > payload.length) throw new HelperChannelError(`DETACHED remainder of ${length} bytes`);
  // A refused ATTACH was never written to: it has no frame in progress.
  if (reason === 'refused' && length > 0) throw new HelperChannelError('DETACHED refused with a remainder');
  return {
    conn: payload[0]!,
    reason,
    code,
    remainder: Buffer.from(payload.subarray(fixed, fixed + length)),
    text: oneLine(text(payload.subarray(fixed + length), HelperLimits.MAX_REPORT_TEXT, 'DETACHED text'), 'DETACHED text'),
  };
}

/** A wait status as wait(2) fills it: 16 bits (exit status << 8, or the signal and the core flag). */
function waitStatusOf(value: number, what: string): number {
  if (value < 0 || value > 0xffff) throw new HelperChannelError(`${what} wait status ${value} is outside 0..65535`);
  return value;
}

export function parseState(payload: Buffer): HelperState {
  if (payload.length !== HelperLimits.STATE_SIZE) throw new HelperChannelError(`STATE of ${payload.length} bytes`);
  const oldest = payload.readBigUInt64BE(0);
  const next = payload.readBigUInt64BE(8);
  const dropped = payload.readBigUInt64BE(16);
  if (oldest > next) throw new HelperChannelError(`STATE oldest ${oldest} is past next ${next}`);
  if (next >= 1n << 63n) throw new HelperChannelError(`STATE next ${next} is at or past 2^63`);
  if (dropped > oldest) throw new HelperChannelError(`STATE dropped ${dropped} is past oldest ${oldest}`);
  const controller = payload[24]!;
  const generation = payload.readUInt32BE(26);
  if (generation < 1) throw new HelperChannelError('STATE generation 0');
  const done = payload[30]!;
  if (done > 1) throw new HelperChannelError(`STATE programDone ${done}`);
  const waitStatus = waitStatusOf(payload.readInt32BE(31), 'STATE');
  if (!done && waitStatus !== 0) throw new HelperChannelError('STATE wait status of a program that runs');
  return { oldest, next, dropped, controller: controller === HelperLimits.NO_CONTROLLER ? undefined : controller, observers: payload[25]!, generation, programDone: done === 1, waitStatus };
}

function parseMessage(type: number, payload: Buffer): HelperMessage {
  switch (type) {
    case HelperMessageType.HELLO: {
      if (payload.length !== HelperLimits.HELLO_SIZE) throw new HelperChannelError(`HELLO of ${payload.length} bytes`);
      const dialect = payload.readUInt16BE(0);
      if (dialect < 2) throw new HelperChannelError(`HELLO with dialect ${dialect}`);
      return { type: 'hello', dialect };
    }
    case HelperMessageType.LOG:
      if (payload.length < 1) throw new HelperChannelError('empty LOG');
      return { type: 'log', priority: Math.min(payload[0]!, 7), text: text(payload.subarray(1), HelperLimits.MAX_LOG_TEXT, 'LOG text') };
    case HelperMessageType.STOP:
      if (payload.length !== 0) throw new HelperChannelError(`STOP of ${payload.length} bytes`);
      return { type: 'stop' };
    case HelperMessageType.END:
      return { type: 'end', report: parseEnd(payload) };
    case HelperMessageType.PID: {
      if (payload.length !== 4) throw new HelperChannelError(`PID of ${payload.length} bytes`);
      const pid = payload.readUInt32BE(0);
      if (pid < 2 || pid > PID_MAX_LIMIT) throw new HelperChannelError(`PID ${pid} is outside 2..${PID_MAX_LIMIT}`);
      return { type: 'pid', pid };
    }
    case HelperMessageType.FIGURES: {
      if (payload.length !== HelperLimits.FIGURES_SIZE) throw new HelperChannelError(`FIGURES of ${payload.length} bytes`);
      const figures = Object.fromEntries(FIGURE_NAMES.map((name, i) => [name, payload.readBigUInt64BE(8 * i)])) as Record<FigureName, bigint>;
      return { type: 'figures', figures };
    }
    case HelperMessageType.DETACHED:
      return { type: 'detached', report: parseDetached(payload) };
    case HelperMessageType.STATE:
      return { type: 'state', state: parseState(payload) };
    case HelperMessageType.PROGRAM_ENDED:
      if (payload.length !== HelperLimits.PROGRAM_ENDED_SIZE) throw new HelperChannelError(`PROGRAM_ENDED of ${payload.length} bytes`);
      return { type: 'program-ended', waitStatus: waitStatusOf(payload.readInt32BE(0), 'PROGRAM_ENDED') };
    default:
      throw new HelperChannelError(`unknown message type 0x${type.toString(16).padStart(2, '0')}`);
  }
}

/** What one push decoded: the well-formed messages before any fault, in order, and the fault if one came. */
export interface HelperDecoded {
  messages: HelperMessage[];
  /** The helper broke the channel's rules: nothing after it is decoded, now or on a later push. */
  fault?: HelperChannelError;
}

/** A kept session's decoder (dialect 3): what it checks DETACHED and STATE against. */
export interface KeptOptions {
  /** The ring's size the helper was started with (--retain-bytes): next - oldest never exceeds it. */
  retainBytes: number;
}

/**
 * Push decoder of the helper's messages: the length is judged on the header, before any payload is kept.
 * A fault never takes the messages before it along: an END followed by junk in the same read is still
 * the helper's report (the worker acts on it, then ends the link and logs the junk).
 *
 * A kept session's decoder (`kept` given) also takes DETACHED, STATE and PROGRAM_ENDED, each bounded by
 * what the worker did: a DETACHED only for conn 0 (the START connection) or a conn the worker attached
 * (attached()), once each; a STATE only in answer to a QUERY (queried()), its offsets never going back;
 * one PROGRAM_ENDED. Without it they are faults, as they are from a session that is not kept.
 */
export class HelperDecoder {
  #buffered: Buffer = Buffer.alloc(0);
  #ended = false;
  #pidSeen = false;
  #fault: HelperChannelError | undefined;
  #stopSeen = false;
  #figuresSeen = false;
  #count = 0;
  #dialect = 1;
  readonly #kept: KeptOptions | undefined;
  /** Per conn: 1 attached (a DETACHED may come), 2 detached (no further one may). */
  readonly #conns = new Uint8Array(256);
  #queries = 0;
  #programEnded = false;
  #lastState: HelperState | undefined;

  constructor(options: { kept?: KeptOptions } = {}) {
    this.#kept = options.kept;
    if (this.#kept) this.#conns[0] = 1;
  }

  /** The helper's dialect: HELLO's, once its first message has come; 1 if that was anything else. */
  get dialect(): number {
    return this.#dialect;
  }

  /** The worker sent ATTACH for `conn`: one DETACHED for it may come. */
  attached(conn: number): void {
    if (!this.#kept) throw new HelperChannelError('ATTACH to a session that is not kept');
    if (!Number.isInteger(conn) || conn < 1 || conn > 255 || this.#conns[conn] !== 0) throw new HelperChannelError(`conn ${conn} is not a fresh one`);
    this.#conns[conn] = 1;
  }

  /** The worker sent QUERY: one STATE may come. */
  queried(): void {
    if (!this.#kept) throw new HelperChannelError('QUERY to a session that is not kept');
    if (this.#queries >= HelperLimits.MAX_QUERIES) throw new HelperChannelError(`more than ${HelperLimits.MAX_QUERIES} QUERY messages unanswered`);
    this.#queries += 1;
  }

  push(chunk: Buffer): HelperDecoded {
    const messages: HelperMessage[] = [];
    if (this.#fault) return { messages, fault: this.#fault };
    this.#buffered = this.#buffered.length ? Buffer.concat([this.#buffered, chunk]) : chunk;
    try {
      while (this.#buffered.length >= HelperLimits.HEADER_SIZE) {
        const message = this.#next();
        if (!message) break;
        messages.push(message);
      }
    } catch (error) {
      this.#fault = error instanceof HelperChannelError ? error : new HelperChannelError((error as Error).message);
      this.#buffered = Buffer.alloc(0);
      return { messages, fault: this.#fault };
    }
    return { messages };
  }

  /** The next whole message, or undefined while its bytes are not all in; throws at the first fault. */
  #next(): HelperMessage | undefined {
    const type = this.#buffered[0]!;
    const length = this.#buffered.readUInt32BE(1);
    if (length > HelperLimits.MAX_CONTROL_PAYLOAD) throw new HelperChannelError(`message of ${length} bytes`);
    if (this.#buffered.length < HelperLimits.HEADER_SIZE + length) return undefined;
    const payload = this.#buffered.subarray(HelperLimits.HEADER_SIZE, HelperLimits.HEADER_SIZE + length);
    this.#buffered = this.#buffered.subarray(HelperLimits.HEADER_SIZE + length);
    if (this.#ended) throw new HelperChannelError('a message after END');
    const message = parseMessage(type, payload);
    // HELLO comes first or not at all: a helper names its dialect once, before anything it says in it.
    if (message.type === 'hello') {
      if (this.#count > 0) throw new HelperChannelError('HELLO after the first message');
      this.#dialect = message.dialect;
    }
    this.#count += 1;
    if (message.type === 'end') {
      this.#ended = true;
      // A kept session's connections each got their rest in their DETACHED (ending).
      if (this.#kept && message.report.remainder.length > 0) throw new HelperChannelError('END of a kept session with a remainder');
    }
    if (message.type === 'pid') {
      if (this.#pidSeen) throw new HelperChannelError('a second PID');
      this.#pidSeen = true;
    }
    // The helper reports the client's STOP once (decode.c act()); every message must be bounded in
    // number, or a helper writing them without end keeps the worker decoding at a full core.
    // FIGURES comes right before END (control.c control_send_end): anything else after it is a broken helper.
    if (this.#figuresSeen && message.type !== 'end') throw new HelperChannelError(message.type === 'figures' ? 'a second FIGURES' : `${message.type.toUpperCase()} after FIGURES`);
    if (message.type === 'figures') this.#figuresSeen = true;
    if (message.type === 'stop') {
      if (this.#stopSeen) throw new HelperChannelError('a second STOP');
      this.#stopSeen = true;
    }
    if (message.type === 'detached' || message.type === 'state' || message.type === 'program-ended') this.#checkKept(message);
    return message;
  }

  /** Dialect 3's messages, each bounded by what the worker asked for. */
  #checkKept(message: Extract<HelperMessage, { type: 'detached' | 'state' | 'program-ended' }>): void {
    const kept = this.#kept;
    const name = message.type.toUpperCase().replace('-', '_');
    if (!kept) throw new HelperChannelError(`${name} from a session that is not kept`);
    if (message.type === 'program-ended') {
      if (this.#programEnded) throw new HelperChannelError('a second PROGRAM_ENDED');
      this.#programEnded = true;
      return;
    }
    if (message.type === 'detached') {
      const { conn } = message.report;
      if (this.#conns[conn] !== 1) throw new HelperChannelError(this.#conns[conn] === 2 ? `a second DETACHED for conn ${conn}` : `DETACHED for conn ${conn}, which was never attached`);
      this.#conns[conn] = 2;
      return;
    }
    if (this.#queries === 0) throw new HelperChannelError('a STATE nobody asked for');
    this.#queries -= 1;
    const { state } = message;
    if (state.next - state.oldest > BigInt(kept.retainBytes)) throw new HelperChannelError(`STATE holds ${state.next - state.oldest} bytes in a ring of ${kept.retainBytes}`);
    const last = this.#lastState;
    if (last && (state.next < last.next || state.oldest < last.oldest || state.generation < last.generation)) throw new HelperChannelError('STATE went back');
    if (last?.programDone && !state.programDone) throw new HelperChannelError('STATE: a program done runs again');
    this.#lastState = state;
  }

  get buffered(): number {
    return this.#buffered.length;
  }
}
