// The worker's side of a kept session (protocol version 3), beside session.ts: its connections
// (kept-connections.ts), root's keep deadline, LIST's QUERY to the helper with its 250 ms bound, and
// the broker's ATTACH and STOP_SESSION checked before anything reaches the helper.
import type { BrokerMessage, DescribedEntry, HelperState, KeptFacts } from '../control/index.ts';
import type { KeepPlan } from './keep-plan.ts';
import type { Started } from './session-start.ts';
import type { SessionState } from './session-state.ts';
import { FdSocket, closeQuietly } from '../io/index.ts';
import { ErrorCode, KEEP_VERSION, type SessionOriginCode } from '../protocol/index.ts';
import { describedEntry } from './kept-describe.ts';
import { KeptConnections, refuseConnection } from './kept-connections.ts';
import type { HelperLink } from './helper-link.ts';
import { KeepDeadline } from './keep-deadline.ts';

/** How long LIST waits for the helper's STATE (the broker bounds the whole LIST at 500 ms). */
export const DESCRIBE_BOUND_MS = 250;

export interface KeptSideDeps {
  facts: KeptFacts;
  link: HelperLink | undefined;
  writeTimeoutMs: number;
  /** An attached connection left (session-state.ts `detach`), or one was attached (`attach`). */
  detached(): void;
  attached(): void;
  log(message: string): void;
}

/** What the session's state says when an ATTACH or STOP_SESSION arrives. */
export interface SessionNow {
  running: boolean;
  finishing: boolean;
  attached: number;
  programEnded: number | undefined;
}

/** The session's state as an ATTACH or STOP_SESSION is judged against it. */
export function sessionNow(state: Pick<SessionState, 'phase' | 'stopping' | 'report' | 'attached' | 'programEnded'>): SessionNow {
  return { running: state.phase === 'running', finishing: state.phase !== 'running' || state.stopping || state.report !== undefined, attached: state.attached, programEnded: state.programEnded };
}

/** What the broker learns of a kept session once it has started (its 'kept' report, LIST's fallback). */
export function keptFacts(started: Started, plan: KeepPlan, origin: SessionOriginCode): KeptFacts {
  return {
    sessionId: started.sessionId!,
    keepMs: plan.keepMs,
    label: plan.label,
    program: started.frame.argv[0] ?? '',
    cwd: started.cwd,
    startedAtMs: Date.now(),
    rows: started.frame.rows,
    cols: started.frame.cols,
    programPid: started.programPid,
    mainPid: started.mainPid,
    origin,
  };
}

/** An ATTACH or STOP_SESSION for a session that is not kept here (the broker knew it only by its unit's
 * name): SESSION_STATE while a kept one still starts, else NO_SESSION. */
export function refuseUnkept(fds: number[], keptAsked: boolean, writeTimeoutMs: number): void {
  const [connection, pidfd] = fds;
  closeQuietly(pidfd ?? -1);
  if (connection === undefined) return;
  let socket: FdSocket;
  try {
    socket = new FdSocket(connection);
  } catch {
    return;
  }
  socket.on('error', () => undefined);
  void refuseConnection(socket, keptAsked ? ErrorCode.SESSION_STATE : ErrorCode.NO_SESSION, keptAsked ? 'the session is still starting' : 'no kept session with that id', writeTimeoutMs, KEEP_VERSION);
}

export class KeptSide {
  #deps: KeptSideDeps;
  readonly connections: KeptConnections;
  #deadline = new KeepDeadline();
  #lastState: HelperState | undefined;
  #waitingState: ((state: HelperState | undefined) => void)[] = [];
  /** STOP_SESSION's connection, held for its STOPPED once the unit is gone. */
  #stopRequester: FdSocket | undefined;

  /** Holds no connection yet: the session adds the START's as conn 0 once it counts it attached
   * (Session#keepStarted), so a hang-up seen at once is a detach counted after that attach. */
  constructor(deps: KeptSideDeps) {
    this.#deps = deps;
    this.connections = new KeptConnections({ detached: () => deps.detached() }, deps.writeTimeoutMs, KEEP_VERSION);
  }

  get facts(): KeptFacts {
    return this.#deps.facts;
  }

  /** When the keep deadline passes (Unix ms), while armed. */
  get deadlineAt(): number | undefined {
    return this.#deadline.at;
  }

  /** The helper's last STATE (its offsets and controller generation), if it gave one. */
  get lastState(): HelperState | undefined {
    return this.#lastState;
  }

  /** No connection left: the session ends `keepMs` from now unless one attaches (root's deadline). */
  arm(onDeadline: () => void, at?: number): void {
    this.#deadline.arm(at === undefined ? this.#deps.facts.keepMs : Math.max(0, at - Date.now()), onDeadline);
  }

  disarm(): void {
    this.#deadline.disarm();
  }

  /** A broker message for this kept session; `stopSession` tells the state machine, `described` answers LIST. */
  fromBroker(message: BrokerMessage, fds: number[], now: SessionNow, to: { stopSession(): void; described(entry: DescribedEntry): void }): void {
    if (message.type === 'attach') return this.attach(message, fds[0]!, fds[1]!, now);
    if (message.type === 'stop-session') {
      if (this.stopSession(message, fds[0]!, fds[1]!, now)) to.stopSession();
      return;
    }
    if (message.type === 'describe') void this.describe(now).then(to.described);
  }

  /** The broker's ATTACH: refused here while the session is not running or is ending (SESSION_STATE), or
   * passed to the helper as the next conn (the helper may still refuse it: DETACHED refused). */
  attach(message: Extract<BrokerMessage, { type: 'attach' }>, connectionFd: number, pidfd: number, now: SessionNow): void {
    closeQuietly(pidfd);
    let socket: FdSocket;
    try {
      socket = new FdSocket(connectionFd);
    } catch (error) {
      return this.#deps.log(`an ATTACH's connection could not be taken: ${(error as Error).message}`);
    }
    socket.on('error', () => undefined);
    const conn = this.connections.nextConn();
    const refuse = (text: string) => void refuseConnection(socket, ErrorCode.SESSION_STATE, text, this.#deps.writeTimeoutMs, KEEP_VERSION);
    if (!now.running) return refuse('the session is still starting');
    if (now.finishing) return refuse('the session is ending');
    if (conn === undefined) return refuse('the session has 255 connections at once, as many as it takes');
    const fromOffset = BigInt(message.fromOffset);
    if (!this.#deps.link?.sendAttach({ conn, role: message.role, fromOffset, rows: message.rows, cols: message.cols }, socket.fd)) {
      return void refuseConnection(socket, ErrorCode.INTERNAL, 'the session helper could not be reached', this.#deps.writeTimeoutMs, KEEP_VERSION);
    }
    this.connections.add(conn, socket);
    this.#deps.attached();
    this.#deps.log(`ATTACH as conn ${conn} (${message.role}, from ${message.fromOffset}) by ${message.peer.principal} pid ${message.peer.pid} uid ${message.peer.uid}`);
  }

  /** The broker's STOP_SESSION: the connection waits for its STOPPED; false (and refused) when the session cannot be stopped now. */
  stopSession(message: Extract<BrokerMessage, { type: 'stop-session' }>, connectionFd: number, pidfd: number, now: SessionNow): boolean {
    closeQuietly(pidfd);
    let socket: FdSocket;
    try {
      socket = new FdSocket(connectionFd);
    } catch {
      return false;
    }
    socket.on('error', () => undefined);
    if (!now.running || now.finishing) {
      void refuseConnection(socket, ErrorCode.SESSION_STATE, now.running ? 'the session is ending' : 'the session is still starting', this.#deps.writeTimeoutMs, KEEP_VERSION);
      return false;
    }
    this.#stopRequester = socket;
    this.#deps.log(`STOP_SESSION by ${message.peer.principal} pid ${message.peer.pid} uid ${message.peer.uid}`);
    return true;
  }

  /** The helper's STATE (one per QUERY, checked by the decoder): LIST's waiting answers take it. */
  stateArrived(state: HelperState): void {
    this.#lastState = state;
    this.#waitingState.shift()?.(state);
  }

  /** LIST: the helper asked (QUERY) with a 250 ms bound; what root knows otherwise, `fresh` false. */
  async describe(now: SessionNow): Promise<DescribedEntry> {
    const asked = !now.finishing && this.#deps.link?.sendQuery() === true;
    let state: HelperState | undefined;
    if (asked) {
      state = await new Promise<HelperState | undefined>((resolve) => {
        const timer = setTimeout(() => {
          const at = this.#waitingState.indexOf(answer);
          // A late STATE still answers this QUERY: keep its place, so the next answer is not mistaken for it.
          if (at >= 0) this.#waitingState[at] = () => undefined;
          resolve(undefined);
        }, DESCRIBE_BOUND_MS);
        const answer = (value: HelperState | undefined) => {
          clearTimeout(timer);
          resolve(value);
        };
        this.#waitingState.push(answer);
      });
    }
    return describedEntry({
      facts: this.#deps.facts,
      finishing: now.finishing,
      attached: now.attached,
      deadlineAt: this.#deadline.at,
      programEnded: now.programEnded,
      state: state ?? this.#lastState,
      fresh: state !== undefined,
    });
  }

  /** Where the session's last frame goes: every connection held for it, and STOP_SESSION's requester. */
  recipients(): { socket: FdSocket; remainder: Buffer | undefined }[] {
    const requester = this.#stopRequester;
    return [...this.connections.recipients(), ...(requester ? [{ socket: requester, remainder: undefined }] : [])];
  }

  closeAll(): void {
    this.disarm();
    this.connections.closeAll();
    this.#stopRequester?.closeDrained();
    this.#stopRequester = undefined;
    for (const waiting of this.#waitingState.splice(0)) waiting(undefined);
  }
}
