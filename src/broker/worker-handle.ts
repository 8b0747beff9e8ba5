// One worker process as the broker sees it: its control channel, the promises of its current
// session (ready, settled, ended), the hand-off of a connection, and renewal for the next session
// once it reports a clean end. A worker tells us its unit's name before starting it, so that unit
// can be stopped if the worker dies (live-sessions.ts).
import type { ChildProcess } from 'node:child_process';
import type { Config } from '../config/index.ts';
import { closeQuietly, FdSocket, IoError } from '../io/index.ts';
import type { Logger } from '../log.ts';
import { ControlDecoder, encodeControl, MAX_BROKER_MESSAGE, type BrokerMessage, type KeptFacts, type SessionPeer, type WorkerMessage, workerMessageFault } from '../control/index.ts';
import { signalWorker, type StartedWorker } from './worker-process.ts';

export class WorkerHandle {
  readonly child: ChildProcess;
  readonly control: FdSocket;
  /** Set when the worker names its unit, before it starts it. */
  unit: string | undefined;
  /** The worker's warm unit (docs/architecture.md "Warm units"), named before it is asked for; kept across sessions. */
  warmUnit: string | undefined;
  endReason: string | undefined;
  /** The worker said its session ended cleanly and it can take another (see renew()). */
  reusable = false;
  /** Version 3: its session asked to be kept and was granted it (kept-sessions.ts). */
  keepGranted = false;
  /** The client service whose process started its session (LiveSessions.adopt; kept-sessions.ts scope). */
  service: string | undefined;
  /** Version 3: its kept session has started ('kept'). */
  kept: KeptFacts | undefined;
  /** Its session's end is decided ('finishing'). */
  isFinishing = false;
  /** Each of these is the current session's; renew() makes new ones for the next. */
  ready!: Promise<void>;
  readonly exited: Promise<void>;
  /** Resolves with the reason once the worker reports its session ended (its unit is gone unless 'cleanup-failed'). */
  ended!: Promise<string>;
  /** Resolves once the worker's session has started or ended, or the worker is gone. */
  settled!: Promise<void>;
  /** Resolves when the worker says its session is finishing (its end decided, its last frame and unit going). */
  finishing!: Promise<void>;
  /** Version 3: resolves once its session is kept (its 'kept' report), finishing or ended, or the worker is gone. */
  keptSettled!: Promise<void>;
  #keptSettle: () => void = () => undefined;
  #readyResolve: () => void = () => undefined;
  #readyReject: (error: Error) => void = () => undefined;
  #endedResolve: (reason: string) => void = () => undefined;
  #settle: () => void = () => undefined;
  #finish: () => void = () => undefined;
  /** The ready promise of the next session, made when a reusable end is reported (its 'ready' follows at once). */
  #nextReady: Promise<void> | undefined;
  #gone = false;
  /** A session was handed over and its 'ended' has not come yet. */
  #inSession = false;
  #onMessage: (message: WorkerMessage) => void = () => undefined;

  /** Takes over a started worker; `config`, when given, is its first message (one started without it waits for it). */
  constructor(started: StartedWorker, log: Logger, config?: Config) {
    // Encoded first: a config too large to send leaves nothing half taken over (WorkerPool.of ends it).
    const first = config ? encodeControl({ type: 'config', config }, MAX_BROKER_MESSAGE) : undefined;
    this.child = started.child;
    this.control = new FdSocket(started.control);
    if (first) this.control.write(first);
    this.#lease();
    this.ready = this.#nextReady!;
    this.#nextReady = undefined;
    this.ended = new Promise((resolve) => (this.#endedResolve = resolve));
    this.settled = new Promise((resolve) => (this.#settle = resolve));
    this.finishing = new Promise((resolve) => (this.#finish = resolve));
    this.keptSettled = new Promise((resolve) => (this.#keptSettle = resolve));
    this.exited = new Promise((resolve) => {
      const gone = (why: string) => {
        this.#gone = true;
        this.#readyReject(new Error(`worker ${this.child.pid ?? '(not started)'} ${why} before it was ready`));
        this.control.close();
        this.#settle();
        this.#keptSettle();
        resolve();
      };
      void started.gone.then(({ why, error }) => {
        if (error) log('error', `worker: ${error.message}`);
        gone(why);
      });
    });
    const decoder = new ControlDecoder();
    this.control.startReading((chunk) => {
      let messages: unknown[];
      try {
        messages = decoder.push(chunk);
      } catch (error) {
        log('error', `worker ${this.child.pid}: ${(error as Error).message}`);
        signalWorker(this.child, 'SIGKILL');
        return;
      }
      for (const raw of messages) {
        // The worker is ours but may be broken: a message of the wrong shape, or one about a session
        // while it has none (it would count for the next one's slot), ends it like a framing fault.
        const fault = workerMessageFault(raw, this.#inSession);
        if (fault) {
          log('error', `worker ${this.child.pid}: ${fault}; ending it`);
          signalWorker(this.child, 'SIGKILL');
          this.control.close();
          return;
        }
        const message = raw as WorkerMessage;
        if (message.type === 'ready') this.#readyResolve();
        if (message.type === 'unit') this.unit = message.name;
        // A retirement names its unit: a later warm unit named before it came stays named.
        if (message.type === 'warm') this.warmUnit = message.retired ? (this.warmUnit === message.name ? undefined : this.warmUnit) : message.name;
        if (message.type === 'finishing') {
          this.isFinishing = true;
          this.#finish();
        }
        if (message.type === 'kept') {
          const { type: _type, ...facts } = message;
          this.kept = facts;
        }
        if (message.type === 'ended') {
          this.#inSession = false;
          this.endReason = message.reason;
          this.reusable = message.reusable === true && message.reason !== 'cleanup-failed';
          // Its next 'ready' may come in this very chunk: the promise it resolves must exist now.
          if (this.reusable) this.#lease();
          this.#endedResolve(message.reason);
        }
        if (message.type === 'started' || message.type === 'ended') this.#settle();
        if (message.type === 'kept' || message.type === 'finishing' || message.type === 'ended') this.#keptSettle();
        this.#onMessage(message);
      }
    });
    // A send that failed (the hand-off's ETOOMANYREFS, say) or a read that stopped: nothing more can
    // pass between us, so this worker could hold a slot for a session it never got, or report an end
    // nobody reads. Closed here, it reads EOF and ends (its session, if any, with SHUTDOWN).
    this.control.on('error', (error) => {
      if (this.control.closed) return;
      log('warning', `worker ${this.child.pid}: control channel failed (${error.message}); ending it`);
      this.control.close();
    });
  }

  /** A new ready promise, which the next 'ready' resolves and the process's death rejects. */
  #lease(): void {
    this.#nextReady = new Promise((resolve, reject) => {
      this.#readyResolve = resolve;
      this.#readyReject = reject;
    });
    this.#nextReady.catch(() => undefined);
  }

  /**
   * For the next session of a worker that reported a reusable end: fresh per-session state. False
   * (and nothing changed) when it did not, or is gone.
   */
  renew(): boolean {
    if (!this.reusable || this.#gone || this.control.closed || !this.#nextReady) return false;
    this.ready = this.#nextReady;
    this.#nextReady = undefined;
    this.reusable = false;
    this.unit = undefined;
    this.endReason = undefined;
    this.keepGranted = false;
    this.kept = undefined;
    this.service = undefined;
    this.isFinishing = false;
    this.ended = new Promise((resolve) => (this.#endedResolve = resolve));
    this.settled = new Promise((resolve) => (this.#settle = resolve));
    this.finishing = new Promise((resolve) => (this.#finish = resolve));
    this.keptSettled = new Promise((resolve) => (this.#keptSettle = resolve));
    this.#onMessage = () => undefined;
    return true;
  }

  /** Its process has exited. */
  get gone(): boolean {
    return this.#gone;
  }

  onMessage(listener: (message: WorkerMessage) => void): void {
    this.#onMessage = listener;
  }

  /**
   * Hands over the connection and the peer's pidfd. Takes both whatever happens: sent, the control
   * socket closes our copies once the kernel has them; not sent, they are closed here. Throws when
   * they did not go: the control socket is closed, or the kernel refused the send, e.g. ETOOMANYREFS
   * (unix(7): our user has more descriptors in flight than our RLIMIT_NOFILE, and the broker holds no
   * capability to pass that). The worker then learns nothing more and ends ('error' above).
   */
  handOff(id: number, clientFd: number, pidfd: number, peer: SessionPeer, deadlineMs: number, version: number): void {
    try {
      this.control.write(encodeControl({ type: 'session', id, peer, deadlineMs, version, reuse: true }), [clientFd, pidfd]);
    } catch (error) {
      closeQuietly(clientFd);
      closeQuietly(pidfd);
      throw error;
    }
    const failure = this.control.writeFailure;
    if (!failure) this.#inSession = true;
    if (failure?.errno === 'ETOOMANYREFS') {
      throw new IoError(failure.code, `${failure.message} (more descriptors in flight for uid ${process.getuid?.()} than this process's RLIMIT_NOFILE)`, { errno: failure.errno, syscall: failure.syscall, cause: failure });
    }
    if (failure) throw failure;
  }

  /**
   * Gives the worker a kept session whose worker is gone (kept-adoption.ts): the session's unit is known
   * from now on (so it can be stopped if this worker dies too), it counts as kept, and the pool's next
   * spare starts now, as after a start. Throws when the message did not go.
   */
  adoptKept(unit: string, sessionId: number, service: string | undefined): void {
    this.send({ type: 'adopt', unit, sessionId });
    this.#inSession = true;
    this.unit = unit;
    this.keepGranted = true;
    this.service = service;
    this.#settle();
  }

  /** A message to the worker's session (version 3: attach, stop-session, describe, keep-answer); `fds`
   * are taken whatever happens, as handOff's. Throws when they did not go. */
  send(message: BrokerMessage, fds: number[] = []): void {
    try {
      this.control.write(encodeControl(message, MAX_BROKER_MESSAGE), fds);
    } catch (error) {
      for (const fd of fds) closeQuietly(fd);
      throw error;
    }
    const failure = this.control.writeFailure;
    if (failure) throw failure;
  }

  shutdown(): void {
    if (!this.control.closed) this.control.write(encodeControl({ type: 'shutdown' }));
  }
}
