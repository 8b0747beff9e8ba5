// One terminal session, from START to its one end. The worker authenticates the start, hands the
// client connection to the session helper (the unit's stdout) and supervises: it never reads a
// data-phase byte. The client socket's write side passes like a token: worker (STARTED) → GO →
// helper (data phase) → END report → worker (the last frame, once the unit is inactive).
import { randomBytes } from 'node:crypto';
import { unitStopWaitMs, type Config } from '../config/schema.ts';
import { FdSocket } from '../io/fd-socket.ts';
import { closeQuietly } from '../io/fds.ts';
import { passRights } from '../io/pass-rights.ts';
import { native } from '../native/binding.ts';
import { ErrorCode, encodeFrame, errorFrame, PROTOCOL_VERSION, type ErrorCodeValue, type FrameOf } from '../protocol/index.ts';
import type { Units } from '../systemd/bus-session.ts';
import { unitNameFor } from '../systemd/unit-names.ts';
import { programLabel } from '../systemd/unit-text.ts';
import type { ExitStatus } from '../systemd/unit-watch.ts';
import type { PeerIdentity, WorkerMessage } from '../control/broker-worker.ts';
import { encodeEnv, type HelperMessage } from '../control/helper-channel.ts';
import { environmentPolicy, programEnvironment } from './environment.ts';
import { flushed, lastWrite, writeFinalFrame, type SessionOutcome } from './final-frame.ts';
import { HelperLink } from './helper-link.ts';
import { unsafeHelper } from './helper-path.ts';
import { recheckPeer } from '../identity/peer-recheck.ts';
import { receiveStart } from './receive-start.ts';
import { SessionError } from '../protocol/session-error.ts';
import { asSessionError, raceAbort, settled } from './start-errors.ts';
import { logSessionEnd, readSessionFigures, type SessionFigures } from './accounting.ts';
import { endRecord } from './end-record.ts';
import { ProgramPid } from './program-pid.ts';

export type EndReason = 'exit' | 'stop' | 'client-gone' | 'error' | 'shutdown';

export interface SessionDeps {
  manager: Units;
  config: Config;
  /** The session helper's path as the unit sees it. */
  helperPath: string;
  report(message: WorkerMessage): void;
  log(message: string): void;
  /** The protocol version WELCOME named (default 1): the helper is told it, and the frames follow it. */
  version?: number;
}

type Phase = 'handshake' | 'starting' | 'running' | 'final' | 'done';

/** How a session ended, for its journal line (end-report.ts). */
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
  #helper: HelperLink | undefined;
  #phase: Phase = 'handshake';
  #outcome: SessionOutcome = { clientGone: false };
  #ending: Ending | undefined;
  /** The unit's figures, read before a stop of ours (MemoryCurrent goes with the cgroup). */
  #figures: Promise<SessionFigures> | undefined;
  #stopping = false;
  #unitStopped: Promise<void> | undefined;
  #timers: NodeJS.Timeout[] = [];
  /** Version 2: the program's pid, as the helper reports it after its fork (STARTED names it). */
  #programPid = new ProgramPid();
  /** process.hrtime.bigint() when STARTED was written and when the unit ended (durationUsec). */
  #startedAt: bigint | undefined;
  #unitEndedAt: bigint | undefined;
  /** Resolves when the unit is inactive (with its exit when systemd recorded it) or gone. */
  #unitDone: (exit: ExitStatus | undefined) => void = () => undefined;
  #unitDonePromise = new Promise<ExitStatus | undefined>((resolve) => (this.#unitDone = resolve));
  /** Before the hand-off: an end that needs no unit (handshake timeout, client gone, shutdown). */
  #abort: (error: SessionError | undefined) => void = () => undefined;
  #abortPromise = new Promise<SessionError | undefined>((resolve) => (this.#abort = resolve));

  /** Takes ownership of the client socket and the peer's pidfd. `deadlineMs`: what is left until START must be in. */
  constructor(clientFd: number, pidfd: number, peer: PeerIdentity, deadlineMs: number, deps: SessionDeps) {
    this.#pidfd = pidfd;
    this.#peer = peer;
    this.#deps = deps;
    this.#deadlineMs = deadlineMs;
    this.#client = new FdSocket(clientFd);
    // Failures surface as rejected reads or the final write's result; an 'error' event with no
    // listener would end this root process instead. The worker never reads after START: hang-ups
    // (POLLRDHUP, POLLHUP) are all it watches for.
    this.#client.on('error', () => this.#onClientGone());
    this.#client.on('hangup', () => this.#onClientGone());
  }

  get unit(): string | undefined {
    return this.#unit;
  }

  /** How the session ended, once it has. */
  get ending(): Ending | undefined {
    return this.#ending;
  }

  /** The worker's own end: broker shutdown or a failure of ours. */
  end(reason: 'shutdown' | 'error', error: SessionError): void {
    if (this.#phase === 'final' || this.#phase === 'done') return;
    this.#outcome.workerError ??= error;
    if (this.#phase !== 'running') return this.#abort(error);
    // The helper ends at a frame boundary and reports "terminated"; the unit is stopped after that
    // report, or after stopTimeoutSec without one.
    if (!this.#helper?.send('terminate')) void this.#stopUnit();
    else this.#later(this.#deps.config.session.stopTimeoutSec * 1000, () => void this.#stopUnit());
  }

  /** Runs the session; resolves with how it ended, once its unit is gone. */
  async run(): Promise<EndReason> {
    try {
      await this.#start();
    } catch (error) {
      const failure = asSessionError(error);
      // Before GO the worker holds the client's write side: an ordinary ERROR.
      if (!this.#outcome.clientGone) await writeFinalFrame(this.#client, errorFrame(failure.wireCode, failure.message), this.#writeTimeoutMs);
      const reason = this.#outcome.workerError?.wireCode === ErrorCode.SHUTDOWN ? 'shutdown' : this.#outcome.clientGone ? 'client-gone' : 'error';
      this.#ending = { reason, error: this.#outcome.clientGone ? undefined : failure };
      await this.#cleanUp();
      return reason;
    }
    const exit = await this.#unitDonePromise;
    this.#unitEndedAt = process.hrtime.bigint();
    this.#phase = 'final';
    for (const timer of this.#timers) clearTimeout(timer);
    // PID 1 holds its own copy of the helper's end until it releases the unit, so EOF is no signal:
    // the unit is inactive now, so what the kernel does not have yet will never come.
    this.#helper?.readAvailable();
    this.#outcome.exit = exit;
    if (this.#version >= 2) await this.#measure();
    const { remainder, frame } = lastWrite(this.#outcome);
    if (frame) await writeFinalFrame(this.#client, frame, this.#writeTimeoutMs, remainder, this.#version);
    else if (!this.#outcome.report && !this.#outcome.clientGone) this.#deps.log(`${this.#unit}: the session helper ended without a report; closing without a last frame`);
    const reason = this.#reason();
    this.#ending = { reason, exit, error: frame?.type === 'error' ? new SessionError(frame.code as ErrorCodeValue, frame.message) : undefined };
    await this.#cleanUp();
    return reason;
  }

  get #version(): number {
    return this.#deps.version ?? PROTOCOL_VERSION;
  }

  /** Version 2's end record, for the last frame: the unit's figures (read when the helper reported, while
   * its cgroup still existed), the helper's counts, and the time from STARTED to the unit's end. */
  async #measure(): Promise<void> {
    if (!this.#outcome.report || this.#outcome.clientGone) return;
    this.#figures ??= readSessionFigures(this.#deps.manager, this.#unit);
    const duration = this.#startedAt !== undefined && this.#unitEndedAt !== undefined ? (this.#unitEndedAt - this.#startedAt) / 1000n : undefined;
    this.#outcome.version = this.#version;
    this.#outcome.accounting = endRecord(await this.#figures, this.#outcome.report, duration);
  }

  get #writeTimeoutMs(): number {
    return this.#deps.config.limits.writeTimeoutMs;
  }

  #reason(): EndReason {
    const { clientGone, workerError, report } = this.#outcome;
    if (clientGone || report?.reason === 'client-gone') return 'client-gone';
    if (workerError) return workerError.wireCode === ErrorCode.SHUTDOWN ? 'shutdown' : 'error';
    if (report?.reason === 'exit') return 'exit';
    if (report?.reason === 'stop') return 'stop';
    return 'error';
  }

  async #start(): Promise<void> {
    const aborted = this.#abortPromise.then((error) => {
      throw error ?? new SessionError(ErrorCode.INTERNAL, 'session ended before its start');
    });
    aborted.catch(() => undefined);
    const deadline = setTimeout(() => this.#abort(new SessionError(ErrorCode.HANDSHAKE_TIMEOUT, 'handshake timeout: no START within the deadline')), this.#deadlineMs);
    let start;
    try {
      start = await raceAbort(receiveStart(this.#client), aborted, (late) => closeQuietly(late.cwdFd));
    } finally {
      clearTimeout(deadline);
    }
    // START was the one frame that carries a descriptor: from here the client's sends of one fail.
    passRights(this.#client.fd, false);
    this.#phase = 'starting';
    try {
      await Promise.race([settled(this.#startUnit(start.frame, start.cwdFd)), aborted]);
    } finally {
      closeQuietly(start.cwdFd);
    }
  }

  async #startUnit(frame: FrameOf<'start'>, cwdFd: number): Promise<void> {
    const { config, manager, helperPath } = this.#deps;
    const unsafe = unsafeHelper(helperPath);
    if (unsafe) throw new SessionError(ErrorCode.INTERNAL, `the session helper is not installed safely: ${unsafe}`);
    const name = unitNameFor(randomBytes(16), config.unitPrefix);
    this.#unit = name;
    // The broker learns the name first, so it can stop the unit even if this process dies mid-start.
    this.#deps.report({ type: 'unit', name });
    recheckPeer(this.#client.fd, this.#pidfd, this.#peer);
    const { environment, dropped } = programEnvironment(frame.env, environmentPolicy(config.session), config.session.term);
    // Names only, quoted: the client's values never reach the journal.
    if (dropped.length > 0) this.#deps.log(`${name}: environment names not passed to the program: ${JSON.stringify(dropped)}`);
    // The environment goes to the program alone, over the control channel (never the unit's Environment=,
    // which the helper would get too): encoded before the unit exists, so a misfit starts nothing.
    let envMessage: Buffer;
    try {
      envMessage = encodeEnv(environment);
    } catch (error) {
      throw new SessionError(ErrorCode.BAD_START, (error as Error).message);
    }
    const [workerEnd, helperEnd] = native().socketpair();
    // The helper never sends a descriptor: the kernel refuses any it tries.
    passRights(workerEnd, false);
    this.#helper = new HelperLink(workerEnd, {
      message: (message) => this.#onHelperMessage(message),
      // The helper's word is untrusted: what it broke is logged as its fault, quoted (never spliced in).
      failed: (error) => this.#deps.log(`${name}: protocol fault of the session helper on its control channel: ${JSON.stringify(error.message)}`),
    });
    let started;
    try {
      started = await manager.startSession(name, {
        // Client bytes never reach unit-file text: the program's name only through a safe alphabet.
        description: `opencode-pty session ${programLabel(frame.argv[0]!)}`,
        helperPath,
        helperArgs: ['--env-from-control', `--protocol=${this.#version}`, `--write-timeout-ms=${config.limits.writeTimeoutMs}`, String(frame.rows), String(frame.cols), ...frame.argv],
        user: config.client.user,
        group: config.client.group,
        cwdFd,
        // The client connection itself: the helper speaks the data phase. Our fd stays a dup we
        // never read; systemd holds one more until it releases the unit.
        stdoutFd: this.#client.fd,
        stderrFd: helperEnd,
        environment: {},
        slice: config.session.slice,
        stopTimeoutSec: config.session.stopTimeoutSec,
        limits: config.session.properties,
        profile: config.session.profile,
      });
    } finally {
      closeQuietly(helperEnd);
    }
    // AddRef keeps the unit loaded after a fast exit, so this sees it even if it already happened.
    manager.waitForExit(name).then(
      (exit) => this.#unitDone(exit),
      (error: Error) => this.#onWatchLost(error),
    );
    this.#helper.start();
    // The helper reads this before it forks the program (so before its PID); the unit is watched already.
    if (!this.#helper.sendEnv(envMessage)) throw new SessionError(ErrorCode.INTERNAL, 'the session helper cannot be reached');
    const startedFrame = await this.#programPid.startedFrame(this.#version, started.mainPid, name, dropped, {
      // What the helper sent before its unit ended is read first: a fast failure has its report.
      unitDone: this.#unitDonePromise.then(() => this.#helper?.readAvailable()),
      timeoutMs: config.limits.operationTimeoutMs,
    });
    this.#client.write(encodeFrame(startedFrame, this.#version));
    this.#startedAt = process.hrtime.bigint();
    // The token rule: nothing of ours may still be queued when the helper starts writing.
    if (!(await flushed(this.#client, this.#writeTimeoutMs))) throw new SessionError(ErrorCode.INTERNAL, 'STARTED could not be written');
    if (this.#phase !== 'starting') return;
    this.#phase = 'running';
    if (!this.#helper.send('go')) throw new SessionError(ErrorCode.INTERNAL, 'the session helper cannot be reached');
    this.#deps.report({ type: 'started', mainPid: started.mainPid });
    this.#deps.log(`session ${name} started for pid ${this.#peer.pid}: ${JSON.stringify(frame.argv[0])}, ${frame.rows}x${frame.cols}`);
  }

  #onHelperMessage(message: HelperMessage): void {
    const unit = this.#unit;
    switch (message.type) {
      case 'log':
        // The helper's text is data: quoted into one line, never spliced into the message.
        return this.#deps.log(`${unit}: session helper [${message.priority}]: ${JSON.stringify(message.text)}`);
      case 'stop':
        return void this.#stopSequence();
      case 'pid':
        return this.#programPid.reported(message.pid);
      case 'end': {
        if (this.#outcome.report) return;
        this.#outcome.report = message.report;
        this.#programPid.failed(message.report.text);
        // While the helper still lives, its cgroup does: MemoryCurrent and TasksCurrent go with it.
        this.#figures ??= readSessionFigures(this.#deps.manager, this.#unit);
        const { reason } = message.report;
        // After exit or stop the helper ends by itself; otherwise the program may outlive the hang-up.
        if (reason !== 'exit' && reason !== 'stop') void this.#stopUnit();
        return;
      }
    }
  }

  /** STOP: SIGTERM and SIGHUP to every process (the helper lives through both), SIGKILL to all but
   * the helper after stopTimeoutSec (the helper does it: systemd 252's KillUnit cannot spare it),
   * and the unit's stop as the backstop. The helper relays the last output, then reports "stop". */
  async #stopSequence(): Promise<void> {
    if (this.#stopping || this.#phase !== 'running') return;
    this.#stopping = true;
    const { manager, config } = this.#deps;
    const stepMs = config.session.stopTimeoutSec * 1000;
    this.#later(stepMs, () => this.#helper?.send('kill'));
    this.#later(2 * stepMs, () => void this.#stopUnit());
    try {
      // SIGTERM, then the hang-up, as systemd's own stop with SendSIGHUP= does. The order matters:
      // readline keeps one pending signal (_rl_caught_signal), so the later one wins; an interactive
      // bash ignores SIGTERM and must see the SIGHUP (with the hang-up first it lived until the KILL step).
      await manager.kill(this.#unit!, 'SIGTERM');
      await manager.kill(this.#unit!, 'SIGHUP');
    } catch (error) {
      this.#deps.log(`${this.#unit}: stopping the session's processes failed: ${(error as Error).message}`);
      void this.#stopUnit();
    }
  }

  #onClientGone(): void {
    if (this.#outcome.clientGone || this.#phase === 'final' || this.#phase === 'done') return;
    this.#outcome.clientGone = true;
    if (this.#phase === 'running') void this.#stopUnit();
    else this.#abort(undefined);
  }

  #onWatchLost(error: Error): void {
    if (this.#unitStopped) return; // our own stop collected the unit: #stopUnit resolves the end
    this.#outcome.workerError ??= new SessionError(ErrorCode.INTERNAL, `watching the session unit failed: ${error.message}`);
    this.#helper?.send('terminate');
    void this.#stopUnit();
  }

  /** Stops the unit (once) and counts it done when it is gone. */
  #stopUnit(): Promise<void> {
    this.#figures ??= readSessionFigures(this.#deps.manager, this.#unit);
    this.#unitStopped ??= this.#deps.manager.stopAndWait(this.#unit!, unitStopWaitMs(this.#deps.config)).then(
      () => this.#unitDone(undefined),
      (error: Error) => {
        this.#deps.log(`${this.#unit}: stopping the session unit failed: ${error.message}`);
        this.#unitDone(undefined);
      },
    );
    return this.#unitStopped;
  }

  #later(ms: number, action: () => void): void {
    this.#timers.push(setTimeout(action, ms));
  }

  /** Closes everything; whatever ended the session, its unit is stopped and gone before it counts as ended. */
  async #cleanUp(): Promise<void> {
    this.#phase = 'done';
    for (const timer of this.#timers) clearTimeout(timer);
    this.#helper?.close();
    // The session is over for every holder (the helper, PID 1's copy as the unit's stdout): what the
    // client left queued is read away here, or the last of them to close would release its fds.
    this.#client.closeDrained();
    closeQuietly(this.#pidfd);
    const figures = this.#figures ?? readSessionFigures(this.#deps.manager, this.#unit);
    if (this.#unit) await this.#deps.manager.stopAndWait(this.#unit, unitStopWaitMs(this.#deps.config));
    const { report } = this.#outcome;
    await logSessionEnd(
      { unit: this.#unit, peer: this.#peer, reason: this.#ending?.reason ?? 'error', exit: this.#ending?.exit, error: this.#ending?.error, bytesIn: report?.bytesIn, bytesOut: report?.bytesOut },
      figures,
    );
  }
}
