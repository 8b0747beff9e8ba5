// One terminal session, from START to its one end: start the unit, relay, and always stop and wait for it.
import { randomBytes } from 'node:crypto';
import { unitStopWaitMs, type Config } from '../config/schema.ts';
import { FdSocket } from '../io/fd-socket.ts';
import { closeQuietly } from '../io/fds.ts';
import { native } from '../native/binding.ts';
import { ErrorCode, encodeFrame, errorFrame, type Frame, type FrameOf } from '../protocol/index.ts';
import type { Units } from '../systemd/bus-session.ts';
import { unitNameFor } from '../systemd/unit-names.ts';
import { programLabel } from '../systemd/unit-text.ts';
import type { ExitStatus } from '../systemd/unit-watch.ts';
import type { PeerIdentity, WorkerMessage } from '../control/broker-worker.ts';
import { sessionEnvironment } from './environment.ts';
import { writeFinalFrame } from './final-frame.ts';
import { recheckPeer } from '../identity/peer-recheck.ts';
import { receiveStart } from './receive-start.ts';
import { Relay } from './relay.ts';
import { SessionError } from '../protocol/session-error.ts';

/** Signals a client may send to its session's processes (HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP WINCH). */
export const ALLOWED_SIGNALS: ReadonlySet<number> = new Set([1, 2, 3, 9, 10, 12, 15, 18, 19, 20, 28]);

export type EndReason = 'exit' | 'stop' | 'client-gone' | 'error' | 'shutdown';

export interface SessionDeps {
  manager: Units;
  config: Config;
  /** The session helper's path as the unit sees it. */
  helperPath: string;
  report(message: WorkerMessage): void;
  log(message: string): void;
}

export interface Ending {
  reason: EndReason;
  error?: SessionError;
  exit?: ExitStatus;
}

export class Session {
  #client: FdSocket;
  #pidfd: number;
  #peer: PeerIdentity;
  #deps: SessionDeps;
  #deadlineMs: number;
  #unit: string | undefined;
  #helper: FdSocket | undefined;
  #relay: Relay | undefined;
  #ending: Ending | undefined;
  #signalsWanted = new Set<number>();
  #signalling = false;
  /** The handshake deadline wrote its own ERROR (it must precede the close that ends the read). */
  #lastFrameSent = false;
  #ended: (ending: Ending) => void = () => undefined;
  #endedPromise = new Promise<Ending>((resolve) => (this.#ended = resolve));

  /** Takes ownership of the client socket and the peer's pidfd. `deadlineMs`: what is left until START must be in. */
  constructor(clientFd: number, pidfd: number, peer: PeerIdentity, deadlineMs: number, deps: SessionDeps) {
    this.#pidfd = pidfd;
    this.#peer = peer;
    this.#deps = deps;
    this.#deadlineMs = deadlineMs;
    this.#client = new FdSocket(clientFd);
    // Before the relay takes over, failures surface as rejected reads or the final write's result;
    // an 'error' event with no listener would end this root process instead.
    this.#client.on('error', () => undefined);
  }

  get unit(): string | undefined {
    return this.#unit;
  }

  /** How the session ended, once it has. */
  get ending(): Ending | undefined {
    return this.#ending;
  }

  /** The one place every end goes through: the first call decides how the session ends. */
  end(reason: EndReason, error?: SessionError, exit?: ExitStatus): void {
    if (this.#ending) return;
    this.#ending = { reason, error, exit };
    this.#relay?.closeInput();
    this.#ended(this.#ending);
  }

  /** Runs the session; resolves with how it ended, once its unit is gone. */
  async run(): Promise<EndReason> {
    try {
      const { exit } = await this.#start();
      exit.then(
        (status) => this.end('exit', undefined, status),
        (error: Error) => this.end('error', new SessionError(ErrorCode.INTERNAL, `watching the session unit failed: ${error.message}`)),
      );
    } catch (error) {
      this.end('error', asSessionError(error));
    }
    const ending = await this.#endedPromise;
    await this.#finish(ending);
    return ending.reason;
  }

  async #start(): Promise<{ exit: Promise<ExitStatus> }> {
    const deadline = setTimeout(() => {
      // The ERROR goes out here, before the close that ends the pending read; the end sends nothing more.
      this.end('error', new SessionError(ErrorCode.HANDSHAKE_TIMEOUT, 'handshake timeout: no START within the deadline'));
      this.#lastFrameSent = true;
      void writeFinalFrame(this.#client, errorFrame(ErrorCode.HANDSHAKE_TIMEOUT, 'handshake timeout'), 1000).finally(() => this.#client.close());
    }, this.#deadlineMs);
    let start;
    try {
      start = await receiveStart(this.#client);
    } finally {
      clearTimeout(deadline);
    }
    try {
      return await this.#startUnit(start.frame, start.cwdFd);
    } finally {
      closeQuietly(start.cwdFd);
    }
  }

  async #startUnit(frame: FrameOf<'start'>, cwdFd: number): Promise<{ exit: Promise<ExitStatus> }> {
    const { config, manager, helperPath } = this.#deps;
    if (this.#ending) throw this.#ending.error ?? new SessionError(ErrorCode.INTERNAL, 'session ended before its start');
    const name = unitNameFor(randomBytes(16), config.unitPrefix);
    this.#unit = name;
    // The broker learns the name first, so it can stop the unit even if this process dies mid-start.
    this.#deps.report({ type: 'unit', name });
    recheckPeer(this.#client.fd, this.#pidfd, this.#peer);
    const [helperEnd, unitEnd] = native().socketpair();
    this.#helper = new FdSocket(helperEnd);
    let started;
    try {
      started = await manager.startSession(name, {
        // Client bytes never reach unit-file text: the program's name only through a safe alphabet.
        description: `opencode-pty session ${programLabel(frame.argv[0]!)}`,
        helperPath,
        helperArgs: [String(frame.rows), String(frame.cols), ...frame.argv],
        user: config.client.user,
        group: config.client.group,
        cwdFd,
        stdoutFd: unitEnd,
        environment: sessionEnvironment(frame.env, config.session.environmentAllowlist, config.session.term),
        slice: config.session.slice,
        stopTimeoutSec: config.session.stopTimeoutSec,
        limits: config.session.properties,
      });
    } finally {
      closeQuietly(unitEnd);
    }
    // AddRef keeps the unit loaded after a fast exit, so this sees it even if it already happened.
    const exit = manager.waitForExit(name);
    exit.catch(() => undefined);
    if (this.#ending) return { exit };
    this.#relay = new Relay(this.#client, this.#helper, { writeTimeoutMs: config.limits.writeTimeoutMs }, {
      stop: () => this.end('stop'),
      signal: (signal) => this.#signal(signal),
      failed: (error) => this.end('error', error),
      clientGone: () => this.end('client-gone'),
    });
    this.#client.write(encodeFrame({ type: 'started', mainPid: started.mainPid, unit: name }));
    this.#deps.report({ type: 'started', mainPid: started.mainPid });
    this.#deps.log(`session ${name} started for pid ${this.#peer.pid}: ${JSON.stringify(frame.argv[0])}, ${frame.rows}x${frame.cols}`);
    this.#relay.start();
    return { exit };
  }

  /** One KillUnit in flight at a time; signals asked for meanwhile are sent after it, each once, so a
   * flood of SIGNAL frames costs a set of at most ALLOWED_SIGNALS.size, not a call per frame. */
  #signal(signal: number): void {
    if (!ALLOWED_SIGNALS.has(signal)) {
      this.end('error', new SessionError(ErrorCode.PROTOCOL, `signal ${signal} is not allowed`));
      return;
    }
    this.#signalsWanted.add(signal);
    if (this.#signalling) return;
    this.#signalling = true;
    void (async () => {
      try {
        for (let next = first(this.#signalsWanted); next !== undefined && !this.#ending; next = first(this.#signalsWanted)) {
          this.#signalsWanted.delete(next);
          await this.#deps.manager.kill(this.#unit!, next);
        }
      } catch (error) {
        this.end('error', new SessionError(ErrorCode.INTERNAL, `signalling the session failed: ${(error as Error).message}`));
      } finally {
        this.#signalling = false;
      }
    })();
  }

  async #finish(ending: Ending): Promise<void> {
    const { manager, config } = this.#deps;
    const { drainTimeoutMs, writeTimeoutMs } = config.limits;
    const unit = this.#unit;
    const relay = this.#relay;
    try {
      if (relay && (ending.reason === 'exit' || ending.reason === 'stop')) {
        // STOP: stop first (SIGTERM + SIGHUP), then drain what the program wrote before it ended.
        if (ending.reason === 'stop') await manager.stopAndWait(unit!, unitStopWaitMs(config));
        if (!(await relay.drain(drainTimeoutMs))) {
          this.#deps.log(`${unit}: output not drained within ${drainTimeoutMs} ms; shutting the transport down`);
        }
        const exit = ending.exit;
        const last: Frame = exit ? { type: 'exit', code: exit.code, status: exit.status, result: exit.result } : { type: 'stopped' };
        await relay.finish(last, writeTimeoutMs);
      } else if (ending.error && ending.reason !== 'client-gone' && !this.#lastFrameSent) {
        const frame = errorFrame(ending.error.wireCode, ending.error.message);
        await (relay ? relay.finish(frame, writeTimeoutMs) : writeFinalFrame(this.#client, frame, writeTimeoutMs));
      }
    } catch (error) {
      this.#deps.log(`${unit ?? 'session'}: ending failed: ${(error as Error).message}`);
    } finally {
      relay?.close();
      this.#helper?.close();
      this.#client.close();
      closeQuietly(this.#pidfd);
    }
    // Whatever ended the session, its unit is stopped and gone before the session counts as ended.
    if (unit) await manager.stopAndWait(unit, unitStopWaitMs(config));
  }
}

function first<T>(set: Set<T>): T | undefined {
  return set.values().next().value;
}

function asSessionError(error: unknown): SessionError {
  if (error instanceof SessionError) return error;
  const code = (error as { code?: string })?.code;
  const message = (error as Error)?.message ?? String(error);
  if (code === 'EOF' || code === 'CLOSED' || code === 'PEER_GONE') return new SessionError(ErrorCode.PROTOCOL, 'client closed before START');
  if (code === 'UNIT_START_FAILED' || code === 'DBUS_ERROR' || code === 'DBUS_TIMEOUT') {
    return new SessionError(ErrorCode.START_FAILED, `session unit could not be started: ${message}`);
  }
  return new SessionError(ErrorCode.INTERNAL, `session failed: ${message}`);
}
