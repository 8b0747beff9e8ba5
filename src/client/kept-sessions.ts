// Version 3's requests from the client's side: ATTACH built from its options, SESSIONS' entries as plain objects.
import { KEEP_VERSION, Limits, Role, SessionOrigin, SessionState, type FrameOf, type SessionEntry } from '../protocol/index.ts';
import { ClientError } from './client-error.ts';
import type { SessionRole } from './keep-state.ts';

export type KeptSessionState = 'starting' | 'attached' | 'detached' | 'ended' | 'finishing' | 'unknown';

/** Who started a kept session, as the server found it at START: the client service's main process (the
 * agent itself), another process of its unit (a plugin, a tool: it may START, and label its session as it
 * likes), or not known. Re-attach only to 'main-pid' sessions you know (docs/security.md). */
export type KeptSessionOrigin = 'main-pid' | 'unit-process' | 'unknown';

/** One kept session as list() returns it. Numbers throughout: ids, pids and Unix times are below 2^53 on the
 * wire, and so are offsets in practice (a server that reports more is refused as a protocol error). */
export interface KeptSession {
  id: number;
  /** 'ended': the program ended while detached; its end is in `end`, and an attach gets the replay, then EXIT.
   * 'unknown': its worker did not answer in time; the entry holds what the server last knew. */
  state: KeptSessionState;
  /** 0 or 1 controlling connections, and how many observe. */
  controllers: number;
  observers: number;
  rows: number;
  cols: number;
  /** The program's pid and the session helper's (its parent); 0 where not known yet. */
  programPid: number;
  mainPid: number;
  startedAtMs: number;
  keepMs: number;
  /** Unix ms when the session is stopped unless a connection attaches; null while one is attached. */
  deadlineMs: number | null;
  /** The oldest output offset still retained, and the offset the next byte will get. */
  oldest: number;
  next: number;
  /** False when the offsets are the last known ones (the session's helper did not answer in time). */
  fresh: boolean;
  /** How the program ended (systemd's ExecMainCode 1 exited, 2 killed, 3 dumped, and the status); null while it runs. */
  end: { code: number; status: number } | null;
  /** Who started it: only a 'main-pid' session is the agent's own. */
  origin: KeptSessionOrigin;
  label: string;
  /** argv[0] and the working directory, cut by the server at 256 and 1024 bytes. */
  program: string;
  cwd: string;
}

const STATE_NAMES: Record<number, KeptSessionState> = {
  [SessionState.STARTING]: 'starting',
  [SessionState.ATTACHED]: 'attached',
  [SessionState.DETACHED]: 'detached',
  [SessionState.ENDED]: 'ended',
  [SessionState.FINISHING]: 'finishing',
  [SessionState.UNKNOWN]: 'unknown',
};

const ORIGIN_NAMES: Record<number, KeptSessionOrigin> = {
  [SessionOrigin.MAIN_PID]: 'main-pid',
  [SessionOrigin.UNIT_PROCESS]: 'unit-process',
  [SessionOrigin.UNKNOWN]: 'unknown',
};

export function keptSessionOf(entry: SessionEntry): KeptSession {
  return {
    id: entry.id,
    state: STATE_NAMES[entry.state]!,
    controllers: entry.controllers,
    observers: entry.observers,
    rows: entry.rows,
    cols: entry.cols,
    programPid: entry.programPid,
    mainPid: entry.mainPid,
    startedAtMs: entry.startedAtMs,
    keepMs: entry.keepMs,
    deadlineMs: entry.deadlineMs === 0 ? null : entry.deadlineMs,
    oldest: offsetNumber(entry.oldest),
    next: offsetNumber(entry.next),
    fresh: entry.fresh,
    end: entry.endCode === 0 ? null : { code: entry.endCode, status: entry.endStatus },
    origin: ORIGIN_NAMES[entry.origin] ?? 'unknown',
    label: entry.label,
    program: entry.program,
    cwd: entry.cwd,
  };
}

function offsetNumber(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ClientError('PROTOCOL', `the server lists offset ${value}, beyond 2^53`);
  return Number(value);
}

export interface AttachOptions {
  /** The offset to replay from: a number (0, the default: everything still retained; a TRUNCATED event
   * says what was gone), or 'now' (no replay, only what the program writes from now on). */
  from?: number | 'now';
  /** 'control' (default): this connection types and sizes the terminal; the previous controller becomes an
   * observer. 'observe': output only. */
  role?: SessionRole;
  /** The terminal's size, applied when attaching to control (default 24x80). */
  rows?: number;
  cols?: number;
  /** Abandons waiting for ATTACHED (rejecting with ABORTED and closing the connection). */
  signal?: AbortSignal;
  /** Rejects with TIMEOUT (and closes) when no ATTACHED came within this many ms (default 30 s; 0: none). */
  timeoutMs?: number;
}

/** The ATTACH frame for `id` and the options; INVALID_ARGUMENT for a value the protocol cannot carry. */
export function attachFrame(id: number, options: AttachOptions): FrameOf<'attach'> {
  checkSessionId(id);
  const { from = 0, role = 'control', rows = 24, cols = 80 } = options;
  if (from !== 'now' && !(Number.isSafeInteger(from) && from >= 0)) {
    throw new ClientError('INVALID_ARGUMENT', `from must be 'now' or an offset from 0 to 2^53-1, not ${String(from)}`);
  }
  if (role !== 'control' && role !== 'observe') throw new ClientError('INVALID_ARGUMENT', `role must be 'control' or 'observe', not ${String(role)}`);
  for (const [name, value] of [['rows', rows], ['cols', cols]] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 0xffff) {
      throw new ClientError('INVALID_ARGUMENT', `${name} must be an integer from 1 to 65535, not ${String(value)}`);
    }
  }
  const fromOffset = from === 'now' ? Limits.FROM_NOW : BigInt(from);
  return { type: 'attach', id, fromOffset, role: role === 'control' ? Role.CONTROL : Role.OBSERVE, rows, cols };
}

export function checkSessionId(id: number): void {
  if (!Number.isSafeInteger(id) || id < 1) throw new ClientError('INVALID_ARGUMENT', `a session id is an integer from 1 to 2^53-1, not ${String(id)}`);
}

/** UNSUPPORTED unless the server agreed to version 3, which `what` needs. */
export function needKeepVersion(version: number, what: string): void {
  needVersion(version, KEEP_VERSION, what);
}

/** UNSUPPORTED unless the server's version has what is asked. */
export function needVersion(version: number, needed: number, what: string): void {
  if (version < needed) {
    throw new ClientError('UNSUPPORTED', `${what} needs protocol version ${needed}; this server speaks version ${version}`);
  }
}
