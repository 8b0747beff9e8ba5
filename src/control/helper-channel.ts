// The worker↔session-helper control channel (the helper's fd 2 at start; native/session/control.h):
// frames of 1 byte type, 4 bytes payload length (big-endian), payload. The helper runs as the client's
// user, so everything it sends is untrusted: known types and reasons only, bounded sizes, strict UTF-8.
import { ErrorCode } from '../protocol/index.ts';
import { EndReasonCode, FIGURE_NAMES, HelperChannelError, HelperLimits, HelperMessageType, PID_MAX_LIMIT, channelLine, channelText, type FigureName, type HelperEndReason } from './helper-channel-core.ts';
import { KeptBounds, parseDetached, parseProgramEnded, parseState, type KeptMessage, type KeptOptions } from './helper-keep.ts';

export * from './helper-channel-core.ts';
export * from './helper-keep.ts';
export * from './helper-warm.ts';

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
  | { type: 'figures'; figures: Record<FigureName, bigint> }
  /** Dialect 3 (helper-keep.ts): DETACHED, STATE, PROGRAM_ENDED. */
  | KeptMessage;

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
    text: channelLine(channelText(payload.subarray(HelperLimits.END_FIXED_SIZE + length), HelperLimits.MAX_REPORT_TEXT, 'END text'), 'END text'),
  };
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
      return { type: 'log', priority: Math.min(payload[0]!, 7), text: channelText(payload.subarray(1), HelperLimits.MAX_LOG_TEXT, 'LOG text') };
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
      return { type: 'program-ended', waitStatus: parseProgramEnded(payload) };
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
  readonly #kept: KeptBounds | undefined;

  constructor(options: { kept?: KeptOptions } = {}) {
    this.#kept = options.kept && new KeptBounds(options.kept);
  }

  /** The helper's dialect: HELLO's, once its first message has come; 1 if that was anything else. */
  get dialect(): number {
    return this.#dialect;
  }

  /** The worker sent ATTACH for `conn`: one DETACHED for it may come. */
  attached(conn: number): void {
    if (!this.#kept) throw new HelperChannelError('ATTACH to a session that is not kept');
    this.#kept.attached(conn);
  }

  /** The worker sent QUERY: one STATE may come. */
  queried(): void {
    if (!this.#kept) throw new HelperChannelError('QUERY to a session that is not kept');
    this.#kept.queried();
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

  /** Dialect 3's messages: only from a kept session, each bounded by what the worker asked for. */
  #checkKept(message: KeptMessage): void {
    if (!this.#kept) throw new HelperChannelError(`${message.type.toUpperCase().replace('-', '_')} from a session that is not kept`);
    this.#kept.check(message);
  }

  get buffered(): number {
    return this.#buffered.length;
  }
}
