// Dialect 3 of the worker↔session-helper channel: kept sessions (native/session/keep.h). ATTACH and
// QUERY to the helper; DETACHED, STATE and PROGRAM_ENDED from it, each decoded strictly and bounded by
// what the worker asked for (KeptBounds, which HelperDecoder applies when made for a kept session).
import { ErrorCode } from '../protocol/index.ts';
import { AttachRole, HelperChannelError, HelperLimits, HelperMessageType, channelLine, channelText, type AttachRoleName, type DetachReason, DetachReasonCode } from './helper-channel-core.ts';

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

/** Dialect 3's messages from the helper. */
export type KeptMessage =
  /** The helper writes nothing more to `conn`; at most one per conn the worker attached (and conn 0). */
  | { type: 'detached'; report: DetachReport }
  /** The answer to one QUERY. */
  | { type: 'state'; state: HelperState }
  /** The program ended (its wait status), once, in a kept session. */
  | { type: 'program-ended'; waitStatus: number };

/**
 * ATTACH (dialect 3): the connection `conn` (1..255, not one attached now: free again after its DETACHED) joins the kept session
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

/** RENDEZVOUS (dialect 4): the listening socket root bound for this kept session rides on its first byte;
 * its payload is the supervisor's cgroup path (kept-store/supervisor-cgroup.ts), the only cgroup whose
 * processes the helper takes as its next control channel. */
export function encodeRendezvous(cgroup: string): Buffer {
  const path = Buffer.from(cgroup, 'utf8');
  if (path.length === 0 || path.length > HelperLimits.MAX_RENDEZVOUS_CGROUP || path[0] !== 0x2f) throw new RangeError(`RENDEZVOUS: a cgroup path of ${path.length} bytes`);
  const header = Buffer.from([HelperMessageType.RENDEZVOUS, 0, 0, 0, 0]);
  header.writeUInt32BE(path.length, 1);
  return Buffer.concat([header, path]);
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
    text: channelLine(channelText(payload.subarray(fixed + length), HelperLimits.MAX_REPORT_TEXT, 'DETACHED text'), 'DETACHED text'),
  };
}

/** A wait status as wait(2) fills it: 16 bits (exit status << 8, or the signal and the core flag). */
function waitStatusOf(value: number, what: string): number {
  if (value < 0 || value > 0xffff) throw new HelperChannelError(`${what} wait status ${value} is outside 0..65535`);
  return value;
}

export function parseProgramEnded(payload: Buffer): number {
  if (payload.length !== HelperLimits.PROGRAM_ENDED_SIZE) throw new HelperChannelError(`PROGRAM_ENDED of ${payload.length} bytes`);
  return waitStatusOf(payload.readInt32BE(0), 'PROGRAM_ENDED');
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

/** A kept session's decoder (dialect 3): what it checks DETACHED and STATE against. */
export interface KeptOptions {
  /** The ring's size the helper was started with (--retain-bytes): next - oldest never exceeds it. */
  retainBytes: number;
}

/** What a kept session's helper may send, given what its worker asked: HelperDecoder's rules for dialect 3. */
export class KeptBounds {
  readonly #kept: KeptOptions;
  /** Per conn: 0 never attached, 1 attached (one DETACHED may come), 2 detached (no further one may until
   * it is attached again: the helper frees the number when it sends DETACHED, so the worker may give it anew). */
  readonly #conns = new Uint8Array(256);
  #queries = 0;
  #programEnded = false;
  #lastState: HelperState | undefined;

  constructor(kept: KeptOptions) {
    this.#kept = kept;
    this.#conns[0] = 1;
  }

  attached(conn: number): void {
    if (!Number.isInteger(conn) || conn < 1 || conn > 255 || this.#conns[conn] === 1) throw new HelperChannelError(`conn ${conn} is not a fresh one: outside 1..255, or attached and its DETACHED not come`);
    this.#conns[conn] = 1;
  }

  queried(): void {
    if (this.#queries >= HelperLimits.MAX_QUERIES) throw new HelperChannelError(`more than ${HelperLimits.MAX_QUERIES} QUERY messages unanswered`);
    this.#queries += 1;
  }

  /** Throws when the helper sent what the worker did not ask for, or its offsets went back. */
  check(message: KeptMessage): void {
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
    if (state.next - state.oldest > BigInt(this.#kept.retainBytes)) throw new HelperChannelError(`STATE holds ${state.next - state.oldest} bytes in a ring of ${this.#kept.retainBytes}`);
    const last = this.#lastState;
    if (last && (state.next < last.next || state.oldest < last.oldest || state.generation < last.generation)) throw new HelperChannelError('STATE went back');
    if (last?.programDone && !state.programDone) throw new HelperChannelError('STATE: a program done runs again');
    this.#lastState = state;
  }
}
