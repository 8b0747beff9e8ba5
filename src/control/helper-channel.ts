// The worker↔session-helper control channel (the helper's fd 2 at start; native/session/control.h):
// frames of 1 byte type, 4 bytes payload length (big-endian), payload. The helper runs as the client's
// user, so everything it sends is untrusted: known types and reasons only, bounded sizes, strict UTF-8.
import { ErrorCode } from '../protocol/index.ts';

export const HelperMessageType = {
  GO: 0x01, // worker → helper: the client socket's write side is the helper's; a payload is the STARTED frame it writes first
  TERMINATE: 0x02, // worker → helper: end at a frame boundary, report "terminated"
  KILL: 0x03, // worker → helper: STOP's last step, SIGKILL every other process of the session's cgroup
  ENV: 0x04, // worker → helper: the program's environment ("NAME=value\0" each), once, before the fork
  HELLO: 0x40, // helper → worker: its dialect (u16), the first message on the channel; dialect 1 helpers send none
  LOG: 0x41, // helper → worker: priority (sd-daemon) and text, for the journal
  STOP: 0x42, // helper → worker: the client sent STOP
  END: 0x43, // helper → worker: the one end report; the helper writes nothing to the client after it
  PID: 0x44, // helper → worker: the program's pid (u32), once, right after the fork, before the helper writes anything
  FIGURES: 0x45, // helper → worker: its cgroup's figures (u64 each, FIGURE_NAMES' order), once, right before END
} as const;

/**
 * The channel's message set, as the helper names it in HELLO, so a worker of a later release tells
 * what a live helper of an earlier one speaks (an upgrade meets helpers started before it):
 * 1: the set before HELLO (the helper sent none); 2: HELLO, and a helper that ends the program itself
 * (hang-up, SIGTERM, SIGKILL of the unit's processes after --stop-timeout-sec) when it drives the end.
 */
export const HELPER_DIALECT = 2;

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
} as const;

/** Signals a client may send to its session's foreground process group (HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP WINCH). */
export const ALLOWED_SIGNALS: ReadonlySet<number> = new Set([1, 2, 3, 9, 10, 12, 15, 18, 19, 20, 28]);

/** The codes a helper may ask the client to be sent for a protocol failure. */
const PROTOCOL_CODES: ReadonlySet<number> = new Set([ErrorCode.PROTOCOL, ErrorCode.FLOW]);

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
  | { type: 'figures'; figures: Record<FigureName, bigint> };

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

/**
 * Push decoder of the helper's messages: the length is judged on the header, before any payload is kept.
 * A fault never takes the messages before it along: an END followed by junk in the same read is still
 * the helper's report (the worker acts on it, then ends the link and logs the junk).
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

  /** The helper's dialect: HELLO's, once its first message has come; 1 if that was anything else. */
  get dialect(): number {
    return this.#dialect;
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
    if (message.type === 'end') this.#ended = true;
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
    return message;
  }

  get buffered(): number {
    return this.#buffered.length;
  }
}
