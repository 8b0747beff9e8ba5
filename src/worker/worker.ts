// A worker process's life once it has its config: one reader of the broker's control channel, the
// sessions it hands over run one at a time, and after each the decision to serve another or exit.
import { native } from '../native/index.ts';
import { type FdSocket, deferredDrains, closeAll, closeQuietly } from '../io/index.ts';
import type { Config } from '../config/index.ts';
import { ErrorCode, KEEP_VERSION, LATEST_VERSION, PROTOCOL_VERSION, SessionError } from '../protocol/index.ts';
import type { Units } from '../systemd/index.ts';
import { readControl, sendControl } from '../control/index.ts';
import type { LogFields, LogLevel } from '../log.ts';
import { sessionFields } from '../log.ts';
import { describeEnd } from './end-report.ts';
import { adoptionDeadline, boundKeep, type KeptRecord, type KeptStore } from '../kept-store/index.ts';
import { Session } from './session.ts';
import { reachKept } from './kept-reach.ts';
import { WarmUnit } from './warm-unit.ts';
import { WARM_CLAIM_TIMEOUT_MS, warmFits } from './warm-plan.ts';

type Received = Awaited<ReturnType<typeof readControl>>;
type SessionMessage = Extract<Received['message'], { type: 'session' }>;
type AdoptMessage = Extract<Received['message'], { type: 'adopt' }>;

/** What decides whether a worker may serve another session (mayServeAnother). */
export interface ReuseFacts {
  /** The session's unit is gone and every fd of it closed (its cleanup did not fail). */
  clean: boolean;
  /** Its helper broke the control channel's rules. */
  helperFailed: boolean;
  /** Descriptors of a peer still closing on threads of their own, and drains deferred to them. */
  pendingCloses: number;
  deferredDrains: number;
  /** The broker asked us to stop, or is gone. */
  closing: boolean;
  /** Sessions served so far, this one included, and the bound. */
  served: number;
  sessionsPerWorker: number;
  /** The broker offered reuse for this session (the session message's `reuse`). */
  offered: boolean;
}

/**
 * Reusable only after a clean end: the unit gone, every fd of the session closed. A peer's descriptor
 * still closing on a thread of its own (a FUSE FLUSH never answered) may hold this process for good: it
 * ends, and its slot stays taken until it has (broker.ts #adopt). Nor after a helper that broke its
 * control channel: nothing it sent is known to be harmless to the next session of this process, and a
 * fresh worker costs one start. Bounded by `limits.sessionsPerWorker`, so nothing a session leaves
 * behind in this process can pile up for long. Pure.
 */
export function mayServeAnother(facts: ReuseFacts): boolean {
  if (!facts.clean || facts.helperFailed || facts.closing || !facts.offered) return false;
  if (facts.pendingCloses !== 0 || facts.deferredDrains !== 0) return false;
  return facts.served < facts.sessionsPerWorker;
}

export interface WorkerDeps {
  control: FdSocket;
  config: Config;
  /** The session helper's path as the units see it. */
  helperPath: string;
  /** Where kept sessions' rendezvous sockets and records are (absent: kept sessions end with their worker). */
  keptStore?: KeptStore;
  /** The supervisor's cgroup: a kept session's helper takes its next channel from there alone. */
  rendezvousCgroup?: string;
  /** No warm unit before the first session: the broker's first spare, for a client that waits already. */
  skipFirstWarm?: boolean;
  log(message: string, fields?: LogFields, level?: LogLevel): void;
}

/**
 * A worker serves one session at a time, and after a clean end it may serve the next: a Node start
 * (`node -e 0`: 80–120 ms here) costs more CPU than a whole short session (≈43 ms from connect to
 * EXIT, warm), so a worker per start made starts in a row wait for the next spare to boot.
 */
export class Worker {
  #deps: WorkerDeps;
  #closing = false;
  #session: Session | undefined;
  #next: (received: Received | undefined) => void = () => undefined;
  /** The broker's answer to this session's keep-request, awaited. */
  #keepAnswer: ((granted: boolean) => void) | undefined;
  /** The unit waiting, started, for this worker's next START (warm-unit.ts); one at most. */
  #warm: WarmUnit | undefined;
  /** D-Bus reconnections so far (warm-unit.ts: a warm unit is drawn on the connection it was started on). */
  #connection = 0;

  constructor(deps: WorkerDeps) {
    this.#deps = deps;
  }

  get closing(): boolean {
    return this.#closing;
  }

  get helperPath(): string {
    return this.#deps.helperPath;
  }

  /** A shutdown, the broker gone (EOF) or a reset: the running session ends, or the idle worker. */
  shutdown(): void {
    this.#closing = true;
    if (this.#session) this.#session.end('shutdown', new SessionError(ErrorCode.SHUTDOWN, 'supervisor is shutting down'));
    else this.#next(undefined);
  }

  /** Serves sessions until the broker stops us; resolves with the process's exit code. `lost`: the
   * control channel's reader failed (the broker is gone). */
  async serve(manager: Units & { onReconnect?(listener: () => void): unknown }, lost: (error: Error) => void): Promise<number> {
    manager.onReconnect?.(() => (this.#connection += 1));
    void this.#read().catch(lost);
    try {
      return await this.#serve(manager);
    } finally {
      // No worker, no warm unit: an idle broker (or one that stops) leaves none behind.
      await this.#warm?.retire();
    }
  }

  async #serve(manager: Units): Promise<number> {
    const { control, config } = this.#deps;
    for (let served = 0; ; ) {
      if (!this.#closing && config.session.warmUnits > 0 && !(served === 0 && this.#deps.skipFirstWarm) && (!this.#warm || !this.#warm.usable)) {
        this.#warm = new WarmUnit({ manager, config, helperPath: this.#deps.helperPath, log: (line) => this.#deps.log(line), named: (name, retired) => sendControl(control, { type: 'warm', name, ...(retired ? { retired } : {}) }), connection: () => this.#connection });
      }
      const received = await new Promise<Received | undefined>((resolve) => {
        this.#next = resolve;
        if (this.#closing) return resolve(undefined);
        sendControl(control, { type: 'ready' });
      });
      this.#next = () => undefined;
      if (!received || (received.message.type !== 'session' && received.message.type !== 'adopt')) break;
      const message = received.message;
      const ran = message.type === 'adopt' ? await this.#adoptSession(message, manager) : await this.#runSession(received, message, manager);
      this.#session = undefined;
      served += 1;
      const reusable = mayServeAnother({
        clean: ran.clean,
        helperFailed: ran.helperFailed,
        pendingCloses: native().pendingCloses(),
        deferredDrains: deferredDrains(),
        closing: this.#closing,
        served,
        sessionsPerWorker: config.limits.sessionsPerWorker,
        offered: message.type === 'session' && message.reuse === true,
      });
      sendControl(control, { type: 'ended', reason: ran.reason, reusable });
      if (!ran.clean) return 1;
      if (!reusable) break;
    }
    return 0;
  }

  /** One reader for the whole life of the process: a session message while idle starts a session. */
  async #read(): Promise<void> {
    const { control, log } = this.#deps;
    for (;;) {
      const next = await readControl(control);
      const { message } = next;
      if (message.type === 'shutdown') this.shutdown();
      else if (message.type === 'keep-answer') {
        const answer = this.#keepAnswer;
        this.#keepAnswer = undefined;
        answer?.(message.granted === true);
      } else if (message.type === 'attach' || message.type === 'stop-session' || message.type === 'describe') {
        // Version 3, routed here by the broker for this worker's kept session.
        if (this.#session) this.#session.fromBroker(message, next.fds);
        else closeAll(next.fds);
      } else if (message.type !== 'session' && message.type !== 'adopt') {
        // The config comes first or never (main.ts receiveConfig); anything else here is the broker's bug.
        closeAll(next.fds);
        log(`an unexpected ${next.message.type} message on the control channel; ignored`, undefined, 'error');
      } else if (this.#session || this.#closing) {
        // A session while one runs is the broker's bug; refuse it without touching the running one.
        closeAll(next.fds);
        log('a session was handed over while another runs; closing it', undefined, 'error');
      } else this.#next(next);
    }
  }

  /**
   * Takes over a kept session whose worker is gone (the broker's orphan scan, or its worker's death): its
   * record read again here (root's, never the helper's word), its helper reached on the rendezvous socket.
   * Without either the unit is stopped as an orphan's is, with a line saying why.
   */
  async #adoptSession(message: AdoptMessage, manager: Units): Promise<{ reason: string; clean: boolean; helperFailed: boolean }> {
    const { config, helperPath, log, keptStore } = this.#deps;
    const { unit } = message;
    const [ours, theirs] = native().socketpair();
    closeQuietly(theirs); // no client: the session's connections come with ATTACH
    const peer = { pid: 0, uid: 0, gid: 0, cgroup: null };
    const session: Session = new Session(ours, -1, peer, 0, {
      manager,
      config,
      helperPath,
      keptStore,
      version: KEEP_VERSION,
      report: (report) => sendControl(this.#deps.control, report),
      log: (line) => log(line, sessionFields(unit)),
    });
    this.#session = session;
    const adoptedAt = Date.now();
    let reached: { record: KeptRecord; fd: number; hello: Buffer } | string;
    try {
      const { mainPid } = await manager.serviceState(unit);
      reached = mainPid > 0 ? await reachKept(keptStore, unit, message.sessionId, config.unitPrefix, config.limits.operationTimeoutMs, { pid: mainPid, uid: config.client.uid }) : 'its unit has no main process';
    } catch (error) {
      reached = (error as Error).message;
    }
    let ended: Promise<string>;
    if (typeof reached === 'string') {
      log(`kept session ${unit} cannot be adopted: ${reached}; stopping it`, sessionFields(unit), 'warning');
      keptStore?.remove(message.sessionId);
      ended = session.adopt(unit);
      session.end('error', new SessionError(ErrorCode.INTERNAL, reached));
    } else {
      // Held to this supervisor's session.maxKeepMs from now on: a lower limit since its start applies.
      const record = boundKeep(reached.record, config.session.maxKeepMs);
      if (record !== reached.record) log(`kept session ${unit}: its keep of ${reached.record.keepMs} ms is lowered to session.maxKeepMs (${record.keepMs} ms)`, sessionFields(unit));
      reached = { ...reached, record };
      const deadlineAt = adoptionDeadline(reached.record, adoptedAt);
      log(`kept session ${unit} adopted: ${reached.record.detachedSinceMs === null ? 'it was attached when its supervisor went (counted as detached from now)' : `detached since ${new Date(reached.record.detachedSinceMs).toISOString()}`}, its deadline ${new Date(deadlineAt).toISOString()}`, sessionFields(unit));
      ended = session.adoptKept(reached.record, reached.fd, reached.hello, deadlineAt);
    }
    try {
      const reason = await ended;
      log(`session ${unit} ended: ${session.ending ? describeEnd(session.ending) : reason}`, { ...sessionFields(unit), RESULT: reason });
      return { reason, clean: true, helperFailed: session.helperFailed };
    } catch (error) {
      log(`session ${unit} could not be cleaned up: ${(error as Error).message}`, sessionFields(unit), 'error');
      return { reason: 'cleanup-failed', clean: false, helperFailed: session.helperFailed };
    }
  }

  /** Runs one handed-over session to its end; `clean` when its unit is gone and nothing of it is left. */
  async #runSession(received: Received, message: SessionMessage, manager: Units): Promise<{ reason: string; clean: boolean; helperFailed: boolean }> {
    const { control, config, helperPath, log } = this.#deps;
    const [clientFd, pidfd] = received.fds as [number, number];
    const { peer, deadlineMs, version = PROTOCOL_VERSION } = message;
    if (!Number.isInteger(version) || version < PROTOCOL_VERSION || version > LATEST_VERSION) throw new Error(`the broker chose protocol version ${version}, which this worker does not speak`);
    const session: Session = new Session(clientFd, pidfd, peer, deadlineMs, {
      manager,
      config,
      helperPath,
      keptStore: this.#deps.keptStore,
      rendezvousCgroup: this.#deps.rendezvousCgroup,
      version,
      report: (report) => sendControl(control, report),
      drawWarm: (kept) => {
        const warm = this.#warm;
        if (!warm || !warmFits(config, kept)) return Promise.resolve(undefined);
        // Drawn once, whatever its answer: a unit that took a CLAIM never serves another START.
        this.#warm = undefined;
        return warm.claim(WARM_CLAIM_TIMEOUT_MS);
      },
      askKeep: () =>
        new Promise<boolean>((resolve) => {
          this.#keepAnswer = resolve;
          sendControl(control, { type: 'keep-request' });
        }),
      // Every line about the session carries its unit and peer, so `journalctl SESSION_UNIT=…` finds them all.
      log: (line) => log(line, { ...sessionFields(session.unit), PEER_PID: peer.pid, PEER_UID: peer.uid }),
    });
    this.#session = session;
    try {
      const reason = await session.run();
      log(`session ${session.unit ?? '(none)'} ended: ${session.ending ? describeEnd(session.ending) : reason}`, { ...sessionFields(session.unit), RESULT: reason });
      return { reason, clean: true, helperFailed: session.helperFailed };
    } catch (error) {
      // Stopping the unit failed: the broker sees this report (or our exit) and stops the unit itself.
      log(`session ${session.unit ?? ''} could not be cleaned up: ${(error as Error).message}`, sessionFields(session.unit), 'error');
      return { reason: 'cleanup-failed', clean: false, helperFailed: session.helperFailed };
    }
  }
}
