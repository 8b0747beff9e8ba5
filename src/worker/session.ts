// One terminal session, from START (or a unit taken over) to its one end: the I/O edge of its state
// machine (session-state.ts). What the client's socket, the helper's channel, the unit and the worker
// tell goes in as events; the actions that come out are done here; #finish alone writes the last
// frame. The client socket's write side passes like a token: worker (handshake) → GO, queued with
// STARTED before the unit is asked for → helper (STARTED, data phase) → END report → worker (the last
// frame, once the unit is inactive). docs/architecture.md "The token rule", "A session's states".
// Beside it: what it needs of the worker (session-deps.ts), what the helper's channel says as its
// events (helper-messages.ts), and a kept session's part (session-keep.ts, kept-side.ts).
import { FdSocket, closeQuietly } from '../io/index.ts';
import { ErrorCode, PROTOCOL_VERSION, SessionError, SessionOrigin } from '../protocol/index.ts';
import type { BrokerMessage, SessionPeer } from '../control/index.ts';
import { lastWriteFor, writeFinalFrame, type EndReason } from './final-frame.ts';
import { HelperLink, type HelperLinkEvents } from './helper-link.ts';
import { ProgramPid } from './program-pid.ts';
import { SessionRecord, endingError, type Ending } from './session-record.ts';
import { startSession, type Started } from './session-start.ts';
import { initialState, step, type SessionAction, type SessionEvent, type SessionState } from './session-state.ts';
import type { SessionDeps } from './session-deps.ts';
import { asSessionError } from './start-errors.ts';
import { UnitStop } from './unit-stop.ts';
import { SessionKeep } from './session-keep.ts';
import { onHelperMessage } from './helper-messages.ts';
import { endToKeep, stoppedFor } from './kept-end.ts';
import type { KeptRecord } from '../kept-store/index.ts';

export type { EndReason, Ending, SessionDeps };

export class Session {
  #client: FdSocket;
  #pidfd: number;
  #peer: SessionPeer;
  #deps: SessionDeps;
  #deadlineMs: number;
  #units: UnitStop;
  #helper: HelperLink | undefined;
  #state: SessionState = initialState();
  /** The program's pid, as the helper reports it after its fork (version 2's STARTED names it). */
  #programPid = new ProgramPid();
  #record = new SessionRecord();
  #started: Started | undefined;
  #ending: Ending | undefined;
  /** Version 3: the START's keep plan, and the kept session's side once it has started. */
  #keep: SessionKeep;
  /** Ends the start's waits (the START read, the unit's start). */
  #abort: (error: SessionError | undefined) => void = () => undefined;
  #aborted = new Promise<SessionError | undefined>((resolve) => (this.#abort = resolve));
  #unitInactive: () => void = () => undefined;
  #unitDone = new Promise<void>((resolve) => (this.#unitInactive = resolve));
  #resolve: (reason: EndReason) => void = () => undefined;
  #reject: (error: unknown) => void = () => undefined;
  #ended = new Promise<EndReason>((resolve, reject) => ((this.#resolve = resolve), (this.#reject = reject)));
  #helperEvents: HelperLinkEvents = {
    message: (message) => onHelperMessage(message, { dispatch: (event) => this.#dispatch(event), programPid: this.#programPid, keep: this.#keep, log: this.#deps.log, unit: this.unit, hello: (dialect) => this.#keep.helperDialect(dialect, this.#helper) }),
    // The helper's word is untrusted: what it broke is logged as its fault, quoted (never spliced in).
    failed: (error) => {
      this.#deps.log(`${this.unit}: protocol fault of the session helper on its control channel: ${JSON.stringify(error.message)}`);
      this.#dispatch({ type: 'helper-lost' });
    },
  };

  /** Takes ownership of the client socket and the peer's pidfd. `deadlineMs`: what is left until START must be in. */
  constructor(clientFd: number, pidfd: number, peer: SessionPeer, deadlineMs: number, deps: SessionDeps) {
    this.#pidfd = pidfd;
    this.#peer = peer;
    this.#deps = deps;
    this.#deadlineMs = deadlineMs;
    this.#units = new UnitStop({
      ...deps,
      inactive: (exit) => {
        this.#record.unitEnded();
        this.#unitInactive();
        this.#dispatch({ type: 'unit-inactive', exit });
      },
      watchLost: (error) => this.#dispatch({ type: 'watch-lost', error: new SessionError(ErrorCode.INTERNAL, `watching the session unit failed: ${error.message}`, { cause: error }) }),
    });
    this.#client = new FdSocket(clientFd);
    this.#keep = new SessionKeep({
      store: deps.keptStore,
      unit: () => this.unit,
      unitPrefix: deps.config.unitPrefix,
      // The principals' scope (kept-sessions.ts): the client service, when the peer was confirmed inside it.
      service: deps.config.requireClientUnit && peer.cgroup !== null && peer.cgroup !== undefined ? (deps.config.client.service ?? undefined) : undefined,
      writeTimeoutMs: deps.config.limits.writeTimeoutMs,
      attached: () => this.#dispatch({ type: 'attach' }),
      detached: () => this.#dispatch({ type: 'detach' }),
      kept: (facts) => this.#deps.report({ type: 'kept', ...facts }),
      keptEnded: (ended) => this.#deps.report({ type: 'kept-ended', ended }),
      log: (line) => this.#deps.log(`${this.unit}: ${line}`),
    });
    // Failures surface as rejected reads or the final write's result; an 'error' event with no
    // listener would end this root process instead. The worker never reads after START: hang-ups
    // (POLLRDHUP, POLLHUP) are all it watches for.
    this.#client.on('error', () => {
      // A kept session's connection that fails (a reset: its peer died with output unread) is detached.
      if (!this.#state.kept) this.#dispatch({ type: 'client-gone' });
    });
    // While START is read, a half-close is answered (docs/protocol.md "Handshake"): the read in
    // progress ends in EOF and the start fails PROTOCOL, written to a peer that can still read it. From
    // the launch on, a hang-up ends the session (a hang-up seen before it is taken up at the launch).
    this.#client.on('hangup', () => {
      // A kept session's START connection only detaches, from its launch on: the helper may have written
      // STARTED before we saw the start through (#keepStarted then finds it gone; kept-connections.ts).
      if (this.#state.phase !== 'handshake' && !this.#state.kept) this.#dispatch({ type: 'client-gone' });
    });
  }

  get unit(): string | undefined {
    return this.#units.name;
  }

  /** How the session ended, once it has. */
  get ending(): Ending | undefined {
    return this.#ending;
  }

  /** Where its lifecycle stands (session-state.ts). */
  get phase(): SessionState['phase'] {
    return this.#state.phase;
  }

  /** The session helper broke its control channel (helper-channel.ts): its process was not ours to trust. */
  get helperFailed(): boolean {
    return this.#state.helperFailed;
  }

  /** The worker's own end: broker shutdown or a failure of ours. A kept session that runs with its record
   * written is released at a shutdown instead: it outlives the supervisor (the next broker adopts it). */
  end(reason: 'shutdown' | 'error', error: SessionError): void {
    if (reason === 'shutdown' && this.#keep.releasesAt(this.#state)) {
      this.#deps.log(`${this.unit}: left running for the next supervisor (kept)`);
      return this.#dispatch({ type: 'release' });
    }
    this.#dispatch({ type: 'worker-end', error });
  }

  /** Leaves a running session's unit running and its helper with the client: no stop, no last frame;
   * our side is closed and run() resolves "released" (kept sessions). Ignored unless running. */
  release(): void {
    this.#dispatch({ type: 'release' });
  }

  /** Runs the session from START; resolves with how it ended, once its unit is gone. */
  run(): Promise<EndReason> {
    startSession({
      client: this.#client,
      pidfd: this.#pidfd,
      peer: this.#peer,
      deps: this.#deps,
      version: this.#version,
      units: this.#units,
      programPid: this.#programPid,
      record: this.#record,
      aborted: this.#aborted,
      deadlineMs: this.#deadlineMs,
      deadline: () => this.#dispatch({ type: 'deadline' }),
      helperEvents: this.#helperEvents,
      launched: (link) => {
        this.#helper = link;
        this.#dispatch({ type: 'launched' });
        if (this.#client.hungUp && !this.#state.kept) this.#dispatch({ type: 'client-gone' });
      },
      unitDone: this.#unitDone,
      stopping: () => this.#state.stopping || this.#units.stopped,
      kept: (plan) => {
        this.#keep.planned(plan);
        this.#dispatch({ type: 'keep' });
      },
      rendezvous: (facts) => this.#keep.launching(facts, this.#peer.origin ?? SessionOrigin.UNKNOWN),
    }).then(
      (started) => {
        this.#started = started;
        if (started.wallClockMs !== undefined) this.#units.later(started.wallClockMs, () => this.#units.expire());
        this.#dispatch({ type: 'started' });
        if (this.#state.kept && this.#state.phase === 'running') this.#keep.started(started, this.#client, this.#helper, this.#peer.origin ?? SessionOrigin.UNKNOWN);
      },
      (error: unknown) => this.#dispatch({ type: 'start-failed', error: asSessionError(error) }),
    );
    return this.#ended;
  }

  /**
   * Takes over a session unit that already runs instead of starting one: watched until it ends, never
   * started, no STARTED (its helper wrote that long ago). `helperFd`: our end of a control channel to
   * its helper, when one was reached (taken). Resolves as run() does.
   */
  adopt(unit: string, helperFd?: number): Promise<EndReason> {
    this.#units.named(unit);
    if (helperFd !== undefined) {
      this.#helper = new HelperLink(helperFd, this.#helperEvents);
      this.#helper.start();
    }
    this.#units.watch(false);
    this.#dispatch({ type: 'adopted' });
    return this.#ended;
  }

  /**
   * Takes over a kept session whose worker is gone, through its rendezvous (`helperFd`, connected; taken):
   * no connection attached, the deadline its record says (`deadlineAt`, Unix ms). From here it runs as
   * any kept session that was detached: LIST, ATTACH, STOP_SESSION, its deadline, its end.
   */
  adoptKept(record: KeptRecord, helperFd: number, hello: Buffer, deadlineAt: number): Promise<EndReason> {
    this.#units.named(record.unit);
    this.#helper = new HelperLink(helperFd, this.#helperEvents, { retainBytes: record.retainBytes });
    this.#keep.adopted(record, this.#helper, deadlineAt);
    // The HELLO read on reaching the helper (kept-reach.ts), judged before anything is sent on the channel.
    this.#helper.preface(hello);
    this.#helper.start();
    this.#units.watch(false);
    this.#dispatch({ type: 'adopted', kept: true });
    return this.#ended;
  }

  /** The one way in: the state machine decides, then its actions are done, in order. An action may
   * tell a new event at once (the helper's channel read to EAGAIN): it is taken on the state as it is. */
  #dispatch(event: SessionEvent): void {
    const { state, actions } = step(this.#state, event);
    this.#state = state;
    this.#deps.onEvent?.(event, state.phase);
    for (const action of actions) this.#perform(action);
  }

  #perform(action: SessionAction): void {
    const stopTimeoutMs = this.#deps.config.session.stopTimeoutSec * 1000;
    switch (action.type) {
      case 'abort-start':
        return this.#abort(action.error);
      case 'report-finishing':
        // Told before the last frame, not after: the client acts on that frame (an agent's next start
        // on its EXIT) while this process may not run again for milliseconds (architecture.md).
        return this.#deps.report({ type: 'finishing' });
      case 'report-started': {
        const { mainPid, unit, frame, warm } = this.#started!;
        this.#deps.report({ type: 'started', mainPid });
        return this.#deps.log(`session ${unit} started for pid ${this.#peer.pid}: ${JSON.stringify(frame.argv[0])}, ${frame.rows}x${frame.cols}${warm ? ', in a warm unit' : ''}`);
      }
      case 'terminate':
        this.#helper?.send('terminate');
        return;
      case 'end-helper':
        // The helper ends at a frame boundary and reports "terminated"; the unit is stopped after that
        // report, or after stopTimeoutSec without one.
        if (!this.#helper?.send('terminate')) void this.#units.stop();
        else this.#units.later(stopTimeoutMs, () => void this.#units.stop());
        return;
      case 'stop-unit':
        return void this.#units.stop();
      case 'stop-steps':
        return void this.#units.stopSteps(() => this.#helper?.send('kill'));
      case 'read-figures':
        return void this.#units.figures();
      case 'finish':
        return void this.#finish().then(this.#resolve, this.#reject);
      case 'release':
        return this.#release();
      case 'arm-deadline':
        return this.#keep.arm(() => this.#dispatch({ type: 'keep-deadline' }));
      case 'disarm-deadline':
        return this.#keep.disarm();
    }
  }

  /** A broker message for this session (version 3: attach, stop-session, describe); the descriptors are
   * taken whatever happens. */
  fromBroker(message: BrokerMessage, fds: number[]): void {
    this.#keep.fromBroker(message, fds, this.#state, {
      stopSession: () => this.#dispatch({ type: 'stop-session' }),
      described: (entry) => this.#deps.report({ type: 'described', requestId: (message as { requestId: number }).requestId, entry }),
    });
  }

  get #version(): number {
    return this.#deps.version ?? PROTOCOL_VERSION;
  }

  /**
   * The session is final (its unit inactive, or no unit was asked for): the one writer of its last
   * frame, by the rule of where its end was decided (final-frame.ts lastWriteFor), then everything
   * closed. PID 1 holds its own copy of the helper's end until it releases the unit, so EOF is no
   * signal: the unit is inactive now, so what the kernel does not have yet will never come.
   */
  async #finish(): Promise<EndReason> {
    this.#units.clearTimers();
    this.#helper?.readAvailable();
    const state = this.#state;
    const accounting = await this.#measure(state);
    const last = lastWriteFor({ ...state, version: this.#version, accounting }, this.#programPid.known);
    const { remainder } = last;
    const reason = state.stopSession && state.report ? 'stop' : last.reason;
    // STOP_SESSION ends a kept session as a STOP: STOPPED, with how the program ended.
    const frame = state.stopSession ? stoppedFor(state.report !== undefined, state.exit, accounting) : last.frame;
    // A kept session's last frame goes to every connection held for it (DETACHED ending), each after its own rest.
    const kept = this.#keep.side;
    const recipients = kept ? kept.recipients() : [{ socket: this.#client, remainder }];
    if (frame) await Promise.all(recipients.map((to) => writeFinalFrame(to.socket, frame, this.#deps.config.limits.writeTimeoutMs, to.remainder, this.#version)));
    else if (state.endedIn === 'running' && !state.report && !state.clientGone) this.#deps.log(`${this.unit}: the session helper ended without a report; closing without a last frame`);
    // A kept session that ended by itself with nobody attached: root keeps its end past the unit (issue 32).
    const keptEnd = kept ? endToKeep(state, recipients.length) : undefined;
    if (keptEnd) this.#keep.keepEnd({ ...keptEnd, accounting: await this.#record.endRecord(this.#units.figures(), undefined) });
    this.#ending = { reason, exit: state.endedIn === 'running' ? state.exit : undefined, error: endingError(state, frame) };
    await this.#cleanUp();
    this.#dispatch({ type: 'finished' });
    return reason;
  }

  /** Version 2's end record for EXIT and STOPPED, when the helper reported to a client still there. */
  async #measure(state: SessionState) {
    if (state.endedIn !== 'running' || this.#version < 2 || !state.report || state.clientGone) return undefined;
    return this.#record.endRecord(state.helperFigures ?? this.#units.figures(), state.report);
  }

  /** Closes everything; whatever ended the session, its unit is stopped and gone before it counts as ended. */
  async #cleanUp(): Promise<void> {
    this.#units.clearTimers();
    this.#helper?.close();
    this.#keep.closeAll();
    this.#keep.ended();
    // The session is over for every holder (the helper, PID 1's copy as the unit's stdout): what the
    // client left queued is read away here, or the last of them to close would release its fds.
    if (!this.#client.closeDrained()) {
      this.#deps.log(`${this.unit}: the client's connection queues more descriptors than the close threads keep up with (or a file system that never answers holds them): it is closed once they are read away, and the worker is not reused`);
    }
    closeQuietly(this.#pidfd);
    const figures = this.#units.figures();
    await this.#units.gone();
    await this.#record.log(this.unit, this.#peer, this.#ending, this.#state.report, figures);
  }

  /** Our side only: the helper keeps the client and the unit keeps running, so nothing queued on the
   * client's connection is read away (it is the helper's to read). */
  #release(): void {
    this.#units.clearTimers();
    this.#helper?.close();
    this.#keep.closeAll();
    this.#client.close();
    closeQuietly(this.#pidfd);
    this.#ending = { reason: 'released' };
    this.#resolve('released');
  }
}
