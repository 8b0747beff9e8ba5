// The broker↔worker control channel: length-prefixed JSON messages on a private socketpair.
// The connection fd (and the peer's pidfd) ride on the `session` message as SCM_RIGHTS.
import type { Config } from '../config/index.ts';
import type { PeerIdentity } from '../identity/index.ts';
import type { SessionEntry, SessionOriginCode } from '../protocol/index.ts';
import type { EndedRecord } from '../kept-store/index.ts';

export type { PeerIdentity };

/** The peer a session is handed off for. `origin` (version 3 START): whether it is the client service's
 * MainPID as the broker found it (SessionOrigin; absent: unknown), which a kept session's LIST entry shows. */
export type SessionPeer = PeerIdentity & { origin?: SessionOriginCode };

/** Who asked for a kept session (ATTACH, STOP_SESSION): for the worker's journal line (src/broker/principals.ts). */
export interface KeptPeer {
  pid: number;
  uid: number;
  principal: 'root' | 'main-pid';
}

/** A SESSIONS entry as JSON carries it: its u64 offsets as decimal strings. */
export type DescribedEntry = Omit<SessionEntry, 'oldest' | 'next'> & { oldest: string; next: string };

/** What the broker learns once a kept session has started, for LIST when its worker does not answer. */
export interface KeptFacts {
  sessionId: number;
  keepMs: number;
  label: string;
  program: string;
  cwd: string;
  startedAtMs: number;
  rows: number;
  cols: number;
  programPid: number;
  mainPid: number;
  /** Who started it (SessionOrigin), as the broker said at the hand-off. */
  origin: SessionOriginCode;
}

/** A SESSIONS entry's fields that are root's facts from the session's start: the same whether the worker
 * describes the session or the broker falls back to what it learnt (src/worker/kept-describe.ts,
 * src/broker/kept-sessions.ts). */
export type EntryFacts = Pick<SessionEntry, 'id' | 'rows' | 'cols' | 'programPid' | 'mainPid' | 'startedAtMs' | 'keepMs' | 'origin' | 'label' | 'program' | 'cwd'>;

export function entryFacts(facts: KeptFacts): EntryFacts {
  return {
    id: facts.sessionId,
    rows: facts.rows,
    cols: facts.cols,
    programPid: facts.programPid,
    mainPid: facts.mainPid,
    startedAtMs: facts.startedAtMs,
    keepMs: facts.keepMs,
    origin: facts.origin,
    label: facts.label,
    program: facts.program,
    cwd: facts.cwd,
  };
}

export type BrokerMessage =
  /** fds: [client connection, peer pidfd]. `deadlineMs`: what is left of the handshake deadline;
   * `version`: the protocol version WELCOME named (1 when absent). */
  /** `reuse`: after a clean end the broker takes the worker back for another session (else it exits). */
  | { type: 'session'; id: number; peer: SessionPeer; deadlineMs: number; version?: number; reuse?: boolean }
  | { type: 'shutdown' }
  /** A kept session whose worker is gone, found running with its record (kept-store): the worker reaches its
   * helper through the rendezvous and holds it as a detached kept session (no fds). */
  | { type: 'adopt'; unit: string; sessionId: number }
  /** The first message to a worker started before the broker had loaded its config (worker-process.ts). */
  | { type: 'config'; config: Config }
  /** Version 3: a connection to the worker's kept session; fds: [connection, peer pidfd]. `fromOffset`:
   * a decimal u64 (FROM_NOW as 2^64-1). */
  | { type: 'attach'; role: 'control' | 'observe'; fromOffset: string; rows: number; cols: number; peer: KeptPeer }
  /** Version 3: end the worker's kept session as a STOP; the connection gets STOPPED once its unit is gone. fds as attach. */
  | { type: 'stop-session'; peer: KeptPeer }
  /** Version 3, LIST: the session as SESSIONS shows it ('described'), within the worker's bound. */
  | { type: 'describe'; requestId: number }
  /** Version 3: whether the kept START the worker asked about ('keep-request') may be kept (limits.maxKept). */
  | { type: 'keep-answer'; granted: boolean };

export type WorkerMessage =
  | { type: 'ready' }
  /** Sent before the unit is started, so the broker can always stop it. */
  | { type: 'unit'; name: string }
  /** The worker's warm unit, named before it is asked for (`retired` once it is gone): the broker's recheck
   * after a D-Bus reconnection leaves it be, since a START may draw it at any time. */
  | { type: 'warm'; name: string; retired?: boolean }
  | { type: 'started'; mainPid: number }
  /** Once a session, before its 'ended': its end is decided (sent just before its last frame, if any);
   * what is left is that frame and stopping and collecting its unit. A start waiting for a slot may
   * count on this one. */
  | { type: 'finishing' }
  /** `reusable`: the session ended cleanly and the worker waits, warm, for another ('ready' follows). */
  | { type: 'ended'; reason: string; reusable?: boolean }
  /** Version 3: a START asks to be kept; the broker counts it against limits.maxKept ('keep-answer'). */
  | { type: 'keep-request' }
  /** Version 3: the kept session has started (after STARTED): the broker routes its id here from now on. */
  | ({ type: 'kept' } & KeptFacts)
  /** Version 3: the answer to 'describe'. */
  | { type: 'described'; requestId: number; entry: DescribedEntry }
  /** Version 3: the kept session's unit ended by itself with nobody attached and no last frame written
   * (its wall clock, an OOM kill): the end root keeps past the unit, sent before 'ended' (the broker
   * checks it as untrusted: kept-store/ended-record.ts checkEnded). */
  | { type: 'kept-ended'; ended: EndedRecord };

export const MAX_CONTROL_MESSAGE = 64 * 1024;
/** The broker's messages may carry the config: as much as the environment takes in one string
 * (MAX_ARG_STRLEN, 128 KiB), so a config a normal spare gets also reaches the first spare. */
export const MAX_BROKER_MESSAGE = 128 * 1024;

/** A worker's config as the broker passes it at spawn (absent: the first message brings it). */
export const WORKER_CONFIG_ENV = 'OPENCODE_PTY_WORKER_CONFIG';
/** A bus address other than the system bus's (tests), for the broker and every worker. */
export const BUS_ADDRESS_ENV = 'OPENCODE_PTY_BUS_ADDRESS';

export class ControlError extends Error {
  readonly code = 'CONTROL';
}

export function encodeControl(message: BrokerMessage | WorkerMessage, limit = MAX_CONTROL_MESSAGE): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  if (body.length > limit) throw new ControlError(`control message too large (${body.length} bytes, at most ${limit})`);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length);
  return Buffer.concat([header, body]);
}

/** Splits a byte stream into messages; the peer is our own process, but sizes are still bounded. */
export class ControlDecoder {
  #buffered: Buffer = Buffer.alloc(0);
  #limit: number;

  constructor(limit = MAX_CONTROL_MESSAGE) {
    this.#limit = limit;
  }

  push(chunk: Buffer): unknown[] {
    this.#buffered = this.#buffered.length ? Buffer.concat([this.#buffered, chunk]) : chunk;
    const messages: unknown[] = [];
    while (this.#buffered.length >= 4) {
      const length = this.#buffered.readUInt32BE(0);
      if (length > this.#limit) throw new ControlError(`control message of ${length} bytes`);
      if (this.#buffered.length < 4 + length) break;
      const body = this.#buffered.subarray(4, 4 + length).toString('utf8');
      this.#buffered = this.#buffered.subarray(4 + length);
      try {
        messages.push(JSON.parse(body));
      } catch {
        throw new ControlError('control message is not JSON');
      }
    }
    return messages;
  }
}
