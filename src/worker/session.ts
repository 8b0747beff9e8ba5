// One terminal session, from START to its one end. The worker authenticates the start, hands the
// client connection to the session helper (the unit's stdout) and supervises: it never reads a
// data-phase byte. The client socket's write side passes like a token: worker (handshake) → GO, queued
// with STARTED before the unit is asked for → helper (STARTED, data phase) → END report → worker (the
// last frame, once the unit is inactive). docs/architecture.md "The token rule".
import { randomBytes } from 'node:crypto';
import type { Config } from '../config/schema.ts';
import { FdSocket } from '../io/fd-socket.ts';
import { closeQuietly } from '../io/fds.ts';
import { passRights } from '../io/pass-rights.ts';
import { ErrorCode, encodeFrame, errorFrame, PROTOCOL_VERSION, type ErrorCodeValue, type FrameOf } from '../protocol/index.ts';
import type { Units } from '../systemd/bus-session.ts';
import { unitNameFor } from '../systemd/unit-names.ts';
import { programLabel } from '../systemd/unit-text.ts';
import type { ExitStatus } from '../systemd/unit-watch.ts';
import type { PeerIdentity, WorkerMessage } from '../control/broker-worker.ts';
import type { HelperMessage } from '../control/helper-channel.ts';
import { endReason, failureReason, lastWrite, lastWriteAfterFailedLaunch, writeFinalFrame, type EndReason, type SessionOutcome } from './final-frame.ts';
import { openHelperLink, type HelperLink } from './helper-link.ts';
import { unsafeHelper } from './helper-path.ts';
import { recheckPeer } from '../identity/peer-recheck.ts';
import { receiveStart } from './receive-start.ts';
import { SessionError } from '../protocol/session-error.ts';
import { asSessionError, raceAbort, settled } from './start-errors.ts';
import { figuresFrom, logSessionEnd, type SessionFigures } from './accounting.ts';
import { endRecord } from './end-record.ts';
import { ProgramPid, startedTemplate } from './program-pid.ts';
import { planStart } from './start-plan.ts';
import { UnitStop } from './unit-stop.ts';
import { startUnit, unlessJobFails } from './unit-start.ts';

export type { EndReason };

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
  #units: UnitStop;
  #helper: HelperLink | undefined;
  #phase: Phase = 'handshake';
  #outcome: SessionOutcome = { clientGone: false };
  #ending: Ending | undefined;
  #toldFinishing = false;
  /** The unit has been asked for: from its helper's fork on, the client's write side is the helper's. */
  #launched = false;
  /** Version 2: the program's pid, as the helper reports it after its fork (STARTED names it). */
  #programPid = new ProgramPid();
  /** process.hrtime.bigint() when the helper named its program (it writes STARTED right then) and when the unit ended (durationUsec). */
  #startedAt: bigint | undefined;
  #unitEndedAt: bigint | undefined;
  /** The program's name as the unit's description gives it, for the journal. */
  #program: string | undefined;
  /** The helper's reading of its cgroup, sent right before its END report (FIGURES). */
  #helperFigures: SessionFigures | undefined;
  /** Before the hand-off: an end that needs no unit (handshake timeout, client gone, shutdown). */
  #abort: (error: SessionError | undefined) => void = () => undefined;
  #abortPromise = new Promise<SessionError | undefined>((resolve) => (this.#abort = resolve));

  /** Takes ownership of the client socket and the peer's pidfd. `deadlineMs`: what is left until START must be in. */
  constructor(clientFd: number, pidfd: number, peer: PeerIdentity, deadlineMs: number, deps: SessionDeps) {
    this.#pidfd = pidfd;
    this.#peer = peer;
    this.#deps = deps;
    this.#deadlineMs = deadlineMs;
    this.#units = new UnitStop(deps);
    this.#client = new FdSocket(clientFd);
    // Failures surface as rejected reads or the final write's result; an 'error' event with no
    // listener would end this root process instead. The worker never reads after START: hang-ups
    // (POLLRDHUP, POLLHUP) are all it watches for.
    this.#client.on('error', () => this.#onClientGone());
    this.#client.on('hangup', () => this.#onClientGone());
  }

  get unit(): string | undefined {
    return this.#units.name;
  }

  /** How the session ended, once it has. */
  get ending(): Ending | undefined {
    return this.#ending;
  }

  /** The session helper broke its control channel (helper-channel.ts): its process was not ours to trust. */
  get helperFailed(): boolean {
    return this.#helper?.failed === true;
  }

  /** The worker's own end: broker shutdown or a failure of ours. */
  end(reason: 'shutdown' | 'error', error: SessionError): void {
    if (this.#phase === 'final' || this.#phase === 'done') return;
    this.#outcome.workerError ??= error;
    if (this.#phase !== 'running') return this.#abort(error);
    // The helper ends at a frame boundary and reports "terminated"; the unit is stopped after that
    // report, or after stopTimeoutSec without one.
    if (!this.#helper?.send('terminate')) void this.#units.stop();
    else this.#units.later(this.#deps.config.session.stopTimeoutSec * 1000, () => void this.#units.stop());
  }

  /** Runs the session; resolves with how it ended, once its unit is gone. */
  async run(): Promise<EndReason> {
    try {
      await this.#start();
    } catch (error) {
      const failure = asSessionError(error);
      this.#finishing();
      if (this.#launched) return this.#failAfterLaunch(failure);
      // Before the unit is asked for, the worker holds the client's write side: an ordinary ERROR.
      if (!this.#outcome.clientGone) await writeFinalFrame(this.#client, errorFrame(failure.wireCode, failure.message), this.#writeTimeoutMs);
      const reason = failureReason(this.#outcome);
      this.#ending = { reason, error: this.#outcome.clientGone ? undefined : failure };
      await this.#cleanUp();
      return reason;
    }
    const exit = await this.#units.done;
    this.#unitEndedAt = process.hrtime.bigint();
    this.#phase = 'final';
    this.#finishing();
    this.#units.clearTimers();
    // PID 1 holds its own copy of the helper's end until it releases the unit, so EOF is no signal:
    // the unit is inactive now, so what the kernel does not have yet will never come.
    this.#helper?.readAvailable();
    this.#outcome.exit = exit;
    if (this.#version >= 2) await this.#measure();
    const { remainder, frame } = lastWrite(this.#outcome);
    if (frame) await writeFinalFrame(this.#client, frame, this.#writeTimeoutMs, remainder, this.#version);
    else if (!this.#outcome.report && !this.#outcome.clientGone) this.#deps.log(`${this.unit}: the session helper ended without a report; closing without a last frame`);
    const reason = endReason(this.#outcome);
    this.#ending = { reason, exit, error: frame?.type === 'error' ? new SessionError(frame.code as ErrorCodeValue, frame.message) : undefined };
    await this.#cleanUp();
    return reason;
  }

  /**
   * A start that failed once the unit was asked for: its helper, if it runs, may hold the client's
   * write side. TERMINATE goes out first, behind GO (or the channel was shut for reading: an abort,
   * unit-start.ts), so a helper that has not read GO yet finds the end with it and writes nothing; one
   * that has read GO sent PID before it (main.c: no write comes before PID reached us). So once the
   * unit is stopped and the channel read, no PID means the write side is ours again, whether or not
   * the stop succeeded; with a PID, the helper's report decides, as for any end of ours (its frame
   * finished first), and without one nothing is written.
   */
  async #failAfterLaunch(failure: SessionError): Promise<EndReason> {
    this.#outcome.workerError ??= failure;
    // Final now: a start still under way (an abort ends only its wait) never counts as running.
    this.#phase = 'final';
    this.#helper?.send('terminate');
    await this.#units.stop();
    this.#helper?.readAvailable();
    const { remainder, frame } = lastWriteAfterFailedLaunch(this.#outcome, failure, this.#programPid.known);
    if (frame) await writeFinalFrame(this.#client, frame, this.#writeTimeoutMs, remainder, this.#version);
    const reason = failureReason(this.#outcome);
    this.#ending = { reason, error: frame?.type === 'error' ? new SessionError(frame.code as ErrorCodeValue, frame.message) : undefined };
    await this.#cleanUp();
    return reason;
  }

  /**
   * The end is decided (the helper's END report, the client's hang-up, the unit's end, a failed
   * start): the broker may hand this session's slot to a start waiting for it once the unit is gone.
   * Told before the last frame, not after: the client acts on that frame (an agent's
   * next start on its EXIT) while this process may not run again for milliseconds, and its start
   * found the slot neither free nor finishing.
   */
  #finishing(): void {
    if (this.#toldFinishing) return;
    this.#toldFinishing = true;
    this.#deps.report({ type: 'finishing' });
  }

  get #version(): number {
    return this.#deps.version ?? PROTOCOL_VERSION;
  }

  /** Version 2's end record, for the last frame: the unit's figures (the helper's reading of its cgroup
   * right before its report, so no property read waits in front of the unit's end; systemd's when it
   * sent none), the helper's counts, and the time from STARTED to the unit's end. */
  async #measure(): Promise<void> {
    if (!this.#outcome.report || this.#outcome.clientGone) return;
    const figures = this.#helperFigures ?? this.#units.figures();
    const duration = this.#startedAt !== undefined && this.#unitEndedAt !== undefined ? (this.#unitEndedAt - this.#startedAt) / 1000n : undefined;
    this.#outcome.version = this.#version;
    this.#outcome.accounting = endRecord(await figures, this.#outcome.report, duration);
  }

  get #writeTimeoutMs(): number {
    return this.#deps.config.limits.writeTimeoutMs;
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
    this.#units.named(name);
    // The broker learns the name first, so it can stop the unit even if this process dies mid-start.
    this.#deps.report({ type: 'unit', name });
    recheckPeer(this.#client.fd, this.#pidfd, this.#peer);
    const { dropped, envMessage, spec } = planStart(frame, config, helperPath, this.#version);
    this.#program = programLabel(frame.argv[0]!);
    // Names only, quoted: the client's values never reach the journal.
    if (dropped.length > 0) this.#deps.log(`${name}: environment names not passed to the program: ${JSON.stringify(dropped)}`);
    // STARTED goes with GO: the helper writes it itself right after its fork (it alone knows the
    // program's pid then), so the first output waits for no turn of ours (AddRef keeps a fast end
    // visible to the watch below).
    const started = encodeFrame(startedTemplate(this.#version, name, dropped), this.#version);
    const { link, helperEnd } = openHelperLink(envMessage, started, {
      message: (message) => this.#onHelperMessage(message),
      // The helper's word is untrusted: what it broke is logged as its fault, quoted (never spliced in).
      failed: (error) => this.#deps.log(`${name}: protocol fault of the session helper on its control channel: ${JSON.stringify(error.message)}`),
    });
    this.#helper = link;
    this.#launched = true;
    const start = startUnit(manager, name, spec, { cwdFd, clientFd: this.#client.fd, helperEnd }, this.#abortPromise);
    const { job } = start;
    // From the helper's fork on, its control channel is read; the session counts as started once it
    // names its program (Type=exec: a helper that runs has been exec'd, so its job ends "done").
    const mainPid = await start.mainPid;
    this.#units.watch((error) => this.#onWatchLost(error));
    this.#helper.start();
    const confirmed = this.#programPid.confirm(this.#version, mainPid, name, {
      // What the helper sent before its unit ended is read first: a fast failure has its report.
      unitDone: this.#units.done.then(() => this.#helper?.readAvailable()),
      timeoutMs: config.limits.operationTimeoutMs,
    });
    try {
      await unlessJobFails(confirmed, job);
    } catch (error) {
      // A program that exits at once with a status of systemd's own range (200..243) fails the job
      // (start-outcome.ts); if the helper had named it, it has written STARTED: the session ran, and
      // it ends as any started session does, as for any job failure seen after the start.
      this.#helper.readAvailable();
      if (!this.#programPid.known) throw error;
      await confirmed;
    }
    this.#startedAt = process.hrtime.bigint();
    // After this the unit's own end decides the session; a late job failure is only told, unless
    // our own stop (a hang-up, a report, a shutdown in the few ms before JobRemoved) cancelled it.
    job.catch((error: Error) => {
      if (!this.#units.stopping) this.#deps.log(`${name}: the start job failed after the program started: ${error.message}`);
    });
    // The call went out long before: the fork it announced came after its reply.
    start.release();
    if (this.#phase !== 'starting') return;
    this.#phase = 'running';
    this.#deps.report({ type: 'started', mainPid });
    this.#deps.log(`session ${name} started for pid ${this.#peer.pid}: ${JSON.stringify(frame.argv[0])}, ${frame.rows}x${frame.cols}`);
  }

  #onHelperMessage(message: HelperMessage): void {
    const unit = this.unit;
    switch (message.type) {
      case 'log':
        // The helper's text is data: quoted into one line, never spliced into the message.
        return this.#deps.log(`${unit}: session helper [${message.priority}]: ${JSON.stringify(message.text)}`);
      case 'stop':
        // The client may have STARTED (the helper's) and sent STOP before this worker saw the PID.
        if (this.#phase === 'running' || this.#phase === 'starting') void this.#units.stopSteps(() => this.#helper?.send('kill'));
        return;
      case 'pid':
        return this.#programPid.reported(message.pid);
      case 'figures':
        // The helper's word, for its client's end record only (root's journal takes systemd's).
        this.#helperFigures = figuresFrom(message.figures);
        return;
      case 'end': {
        if (this.#outcome.report) return;
        this.#outcome.report = message.report;
        // The helper has ended the data phase: what is left is the unit's end and the last frame.
        if (this.#phase === 'running') this.#finishing();
        this.#programPid.failed(message.report.text);
        // Without the helper's own figures, systemd's are read now, while its cgroup still is.
        if (!this.#helperFigures) void this.#units.figures();
        const { reason } = message.report;
        // After exit or stop the helper ends by itself; otherwise the program may outlive the hang-up.
        if (reason !== 'exit' && reason !== 'stop') void this.#units.stop();
        return;
      }
    }
  }

  #onClientGone(): void {
    if (this.#outcome.clientGone || this.#phase === 'final' || this.#phase === 'done') return;
    this.#outcome.clientGone = true;
    // The end is decided now, not when the unit's stop is over: the client may start again at once.
    this.#finishing();
    if (this.#phase === 'running') void this.#units.stop();
    else this.#abort(undefined);
  }

  #onWatchLost(error: Error): void {
    this.#outcome.workerError ??= new SessionError(ErrorCode.INTERNAL, `watching the session unit failed: ${error.message}`);
    this.#helper?.send('terminate');
    void this.#units.stop();
  }

  /** Closes everything; whatever ended the session, its unit is stopped and gone before it counts as ended. */
  async #cleanUp(): Promise<void> {
    this.#phase = 'done';
    this.#units.clearTimers();
    this.#helper?.close();
    // The session is over for every holder (the helper, PID 1's copy as the unit's stdout): what the
    // client left queued is read away here, or the last of them to close would release its fds.
    if (!this.#client.closeDrained()) {
      this.#deps.log(`${this.unit}: the client's connection queues more descriptors than the close threads keep up with (or a file system that never answers holds them): it is closed once they are read away, and the worker is not reused`);
    }
    closeQuietly(this.#pidfd);
    const figures = this.#units.figures();
    await this.#units.gone();
    const { report } = this.#outcome;
    await logSessionEnd(
      {
        unit: this.unit,
        peer: this.#peer,
        reason: this.#ending?.reason ?? 'error',
        exit: this.#ending?.exit,
        error: this.#ending?.error,
        bytesIn: report?.bytesIn,
        bytesOut: report?.bytesOut,
        program: this.#program,
        durationMs: this.#startedAt === undefined ? undefined : ((this.#unitEndedAt ?? process.hrtime.bigint()) - this.#startedAt) / 1_000_000n,
      },
      figures,
    );
  }
}
