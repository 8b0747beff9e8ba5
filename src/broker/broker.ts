// The accept-broker: every connection's way in, in the earlier supervisor's order (the checks at
// accept in accept-gate.ts, the handshake and hand-off in connection.ts); the connections in
// handshake and the live sessions; idle exit; shutdown. Nothing after start-up is fatal.
import { type Config, unitStopWaitMs } from '../config/index.ts';
import { closeQuietly, FdSocket, passRights } from '../io/index.ts';
import type { Logger } from '../log.ts';
import { ErrorCode, type ErrorCodeValue } from '../protocol/index.ts';
import type { Units } from '../systemd/index.ts';
import { Admission, type Slot } from './admission.ts';
import { SessionSlots } from './session-slots.ts';
import { refuseNow, refuseSocket } from './refuse.ts';
import type { Listener } from './listener.ts';
import { ClientService } from '../identity/index.ts';
import { AcceptGate, type PeerAtAccept } from './accept-gate.ts';
import { RefusalReporter } from './refusal-reporter.ts';
import { serveConnection, type ConnectionDeps } from './connection.ts';
import { connectionDeps } from './connection-deps.ts';
import { IdleExit } from './idle-exit.ts';
import { StatusLine } from './status-line.ts';
import type { WorkerPool } from './worker-pool.ts';
import { AcceptLoop } from './accept-loop.ts';
import { LiveSessions } from './live-sessions.ts';
import { Orphans } from './orphans.ts';
import { Tarpit } from './tarpit.ts';
import type { PeerCredentials } from '../native/index.ts';
import type { AcceptedConnection } from './accept-order.ts';
import { KeptStore } from '../kept-store/index.ts';
import { sessionIdOf } from '../systemd/index.ts';
import { KeptAdoption } from './kept-adoption.ts';
import { KeptEnds } from './kept-ends.ts';

export { ADMISSION_REFUSED } from './accept-gate.ts';

export interface BrokerDeps {
  config: Config;
  listener: Listener;
  manager: Units;
  pool: WorkerPool;
  log: Logger;
  notify(state: string): void;
  /** Where kept sessions' records are (tests: a directory of their own). */
  keptStore?: KeptStore;
}

export class Broker {
  #deps: BrokerDeps;
  #admission: Admission;
  #slots: SessionSlots;
  #service: ClientService | undefined;
  #gate: AcceptGate;
  #refusals: RefusalReporter;
  #handshakes = new Set<FdSocket>();
  /** What each connection's handshake uses of the broker (connection.ts). */
  #connections: ConnectionDeps;
  #sessions: LiveSessions;
  /** Units of an earlier run still being stopped; each holds a session slot until it is gone. */
  #orphans: Orphans;
  #accepts: AcceptLoop;
  /** Kept sessions' rendezvous sockets and records, and their adoption by new workers. */
  #store: KeptStore;
  #adoption: KeptAdoption;
  /** The ends of kept sessions whose units ended with nobody attached, kept for an ATTACH (issue 32). */
  #ends: KeptEnds;
  /** Refusals at accept, answered after a short delay (tarpit.ts). */
  #tarpit = new Tarpit<{ fd: number; code: ErrorCodeValue; message: string }>(({ fd, code, message }) => this.#refuseFd(fd, code, message));
  #idle: IdleExit;
  #statusLine = new StatusLine(() => {
    const orphans = this.#orphans.size ? `, ${this.#orphans.size} orphans stopping` : '';
    const kept = this.#sessions.kept.count ? `, ${this.#sessions.kept.count} kept` : '';
    return `${this.#sessions.size} sessions, ${this.#handshakes.size} handshakes${kept}${orphans}`;
  }, (state) => this.#deps.notify(state));
  #stopping = false;
  #finished: (code: number) => void = () => undefined;
  /** Resolves with the exit code once every session is gone. */
  readonly done = new Promise<number>((resolve) => (this.#finished = resolve));

  constructor(deps: BrokerDeps) {
    this.#deps = deps;
    const { limits, client } = deps.config;
    this.#admission = new Admission(limits);
    this.#slots = new SessionSlots(limits.maxSessions);
    this.#refusals = new RefusalReporter(deps.log);
    this.#store = deps.keptStore ?? new KeptStore(undefined, (name, why) => deps.log('warning', `the kept store's ${name} is left: ${why}`));
    this.#ends = new KeptEnds({ store: this.#store, unitPrefix: deps.config.unitPrefix, maxKept: () => limits.maxKept, maxKeepMs: () => deps.config.session.maxKeepMs, log: deps.log, changed: () => this.#status() });
    this.#sessions = new LiveSessions({
      units: deps.manager,
      log: deps.log,
      reapTimes: { stopWaitMs: unitStopWaitMs(deps.config), killWaitMs: limits.operationTimeoutMs },
      giveBack: (worker) => deps.pool.giveBack(worker),
      changed: () => this.#changed(),
      slotFreed: () => this.#status(),
      maxKept: limits.maxKept,
      unitPrefix: deps.config.unitPrefix,
      keptWorkerGone: (unit) => this.#keptWorkerGone(unit),
      ends: this.#ends,
    });
    this.#orphans = new Orphans({
      units: deps.manager,
      slots: this.#slots,
      log: deps.log,
      prefix: `${deps.config.unitPrefix}session-`,
      stopTimeoutSec: deps.config.session.stopTimeoutSec,
      killWaitMs: limits.operationTimeoutMs,
      changed: () => this.#changed(),
      unclaimed: (unit, why) => void this.#adoption.adoptOrReap(unit, why),
    });
    this.#adoption = new KeptAdoption({
      store: this.#store,
      unitPrefix: deps.config.unitPrefix,
      takeWorker: () => deps.pool.take(),
      slots: this.#slots,
      kept: this.#sessions.kept,
      hold: (worker, slot, service) => this.#sessions.adopt(worker, slot, service),
      // A shutdown leaves kept sessions for the next broker, whatever became of their adoption.
      reap: (unit, why) => (this.#stopping ? deps.log('notice', `${unit} left for the next supervisor (${why})`) : this.#orphans.reap(unit, why)),
      log: deps.log,
      settled: () => this.#changed(),
    });
    if (client.service) this.#service = new ClientService(client.service, () => deps.manager.serviceState(client.service!));
    this.#accepts = new AcceptLoop(
      deps.listener.fd,
      {
        quick: (connection) => this.#quick(connection),
        check: (connection) => this.#accepted(connection.fd, connection.credentials),
        drop: (connection) => this.#refuseFd(connection.fd, ErrorCode.SHUTDOWN, 'supervisor is shutting down'),
        order: () => ({ mainPid: this.#service?.latestMainPid, clientUid: client.uid }),
        afterEvent: () => this.#changed(),
      },
      deps.log,
    );
    this.#gate = new AcceptGate({ config: deps.config, admission: this.#admission, service: this.#service, admitRoot: true });
    this.#connections = connectionDeps({
      config: deps.config,
      service: this.#service,
      admission: this.#admission,
      slots: this.#slots,
      refusals: this.#refusals,
      pool: deps.pool,
      sessions: this.#sessions,
      log: deps.log,
    });
    this.#idle = new IdleExit(limits.idleExitMs, () => {
      deps.log('info', `idle for ${limits.idleExitMs} ms; exiting (systemd keeps the socket)`);
      this.shutdown();
    });
  }

  /**
   * Serves at once; what an earlier run left behind is stopped meanwhile, all in parallel and in
   * the background, each orphan holding a session slot until it is gone. Failing to list the
   * orphans is fatal (nothing is accepted): their slots could not be counted.
   */
  async start(): Promise<void> {
    const { config, log, pool, listener } = this.#deps;
    // The first connection (the one that started us) needs the client service's state: read it
    // while the orphans are listed, not after (docs/benchmarks.md "Cold start").
    this.#service?.freshen();
    const units = await this.#orphans.list();
    // Kept sessions with their record are adopted (each by a new worker, in the background: an ATTACH
    // for one waits for it, kept-sessions.ts), the rest reaped; a record or socket no unit has is removed.
    for (const unit of units) this.#adoption.adoptOrReap(unit, 'left by an earlier run');
    const live = new Set(units.map((unit) => sessionIdOf(unit, config.unitPrefix)));
    for (const id of this.#store.ids()) if (!live.has(id)) this.#store.remove(id);
    // Ends kept by an earlier run (ended records are no session's files: the line above leaves them).
    this.#ends.load();
    pool.warm();
    // No connection takes descriptors until its START is due (accepted ones inherit this at connect()).
    const refusesFds = passRights(listener.fd, false);
    this.#accepts.start();
    this.#deps.notify('READY=1');
    this.#status();
    this.#checkIdle();
    log('info', `serving ${listener.fromSystemd ? 'the socket systemd passed' : config.socketPath} for ${config.client.user}${refusesFds ? '' : '; this kernel lacks SO_PASSRIGHTS (6.16): descriptors sent before START are received and closed'}`);
  }

  /** After a bus reconnection: units no live worker claims are stopped like orphans (orphans.ts). */
  recheckUnits(): Promise<void> {
    const owner = {
      // A warm unit is claimed as long as its worker lives: a START may draw it at any moment.
      claimed: () => new Set([...this.#sessions.claimed(), ...this.#deps.pool.warmUnits()]),
      sessions: () => this.#sessions.size,
      stopping: () => this.#stopping,
    };
    return this.#orphans.recheck(owner, this.#deps.config.limits.operationTimeoutMs);
  }

  /** A worker died with its kept session: adopted anew when its record says so (else its unit is stopped);
   * during a shutdown it is left for the next broker. */
  #keptWorkerGone(unit: string): boolean {
    const judged = this.#adoption.judge(unit);
    if ('why' in judged) {
      const id = sessionIdOf(unit, this.#deps.config.unitPrefix);
      if (id !== undefined) this.#store.remove(id);
      return false;
    }
    if (!this.#stopping) this.#adoption.adopt(judged.record);
    return true;
  }

  /** SIGTERM: accept nothing more, end every session and wait until their units are gone; kept sessions
   * are released by their workers instead, left running for the next broker (docs/architecture.md). */
  shutdown(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#deps.notify('STOPPING=1');
    this.#stopAccepting();
    for (const socket of this.#handshakes) refuseSocket(socket, ErrorCode.SHUTDOWN, 'supervisor is shutting down');
    this.#sessions.shutdown();
    this.#maybeFinish();
  }

  #stopAccepting(): void {
    this.#accepts.close();
    this.#tarpit.close();
    this.#refusals.flush();
    this.#idle.cancel();
    this.#ends.close();
    this.#deps.pool.stop();
    // systemd keeps the listener: leave it as it was given, for whichever broker serves it next.
    if (this.#deps.listener.fromSystemd) passRights(this.#deps.listener.fd, true);
    else closeQuietly(this.#deps.listener.fd);
  }

  #maybeFinish(): void {
    if (this.#stopping && this.#sessions.size === 0 && this.#orphans.size === 0 && this.#handshakes.size === 0 && this.#gate.pending === 0) {
      this.#finished(0);
    }
  }

  /** A refusal decided from what is known at accept (AcceptGate.quick): noted, answered after the tarpit's delay. */
  #quick(connection: AcceptedConnection): boolean {
    const refused = this.#gate.quick(connection);
    if (!refused) return false;
    this.#idle.cancel();
    this.#refusals.note(refused.key, refused.reason, refused.detail);
    this.#tarpit.hold({ fd: connection.fd, code: refused.code, message: refused.message });
    return true;
  }

  #accepted(fd: number, credentials: PeerCredentials | undefined): void {
    // One queued before the listener refused descriptors (the connection that started us) takes
    // none from now on either; what it already queued is drained at its last close.
    passRights(fd, false);
    this.#idle.cancel();
    this.#handle(fd, credentials).catch((error: Error) => this.#deps.log('error', `connection: ${error.message}`));
  }

  async #handle(fd: number, credentials: PeerCredentials | undefined): Promise<void> {
    try {
      await this.#admit(fd, credentials);
    } finally {
      // Every way out, refused ones included, may leave the broker idle or let a shutdown finish.
      this.#changed();
    }
  }

  /** Identity and admission at accept (accept-gate.ts); owns `fd` until #authenticate takes it. */
  async #admit(fd: number, credentials: PeerCredentials | undefined): Promise<void> {
    const acceptedAt = Date.now();
    const decision = await this.#gate.decide(fd, credentials);
    if (!decision.admitted) {
      this.#refusals.note(decision.key, decision.reason, decision.detail);
      return this.#tarpit.hold({ fd, code: decision.code, message: decision.message });
    }
    const { slot, peer } = decision;
    if (this.#stopping) {
      this.#admission.release(slot);
      closeQuietly(peer.pidfd);
      return this.#refuseFd(fd, ErrorCode.SHUTDOWN, 'supervisor is shutting down');
    }
    let socket: FdSocket;
    try {
      socket = new FdSocket(fd);
    } catch (error) {
      this.#admission.release(slot);
      closeQuietly(peer.pidfd);
      closeQuietly(fd);
      return this.#deps.log('warning', `connection: ${(error as Error).message}`);
    }
    await this.#authenticate(socket, peer, slot, acceptedAt);
  }

  /** The handshake up to the hand-off (connection.ts); counted among the handshakes meanwhile. */
  async #authenticate(socket: FdSocket, peer: PeerAtAccept, slot: Slot, acceptedAt: number): Promise<void> {
    this.#handshakes.add(socket);
    this.#status();
    try {
      await serveConnection(socket, peer, slot, acceptedAt, this.#connections);
    } finally {
      this.#handshakes.delete(socket);
    }
  }

  /** A session, handshake or orphan is gone: report it, and the broker may now be idle or done. */
  #changed(): void {
    this.#status();
    this.#checkIdle();
    this.#maybeFinish();
  }

  #refuseFd(fd: number, code: ErrorCodeValue, message: string): void {
    refuseNow(fd, code, message);
  }

  #status(): void {
    this.#statusLine.changed();
  }

  #checkIdle(): void {
    this.#idle.look(!this.#stopping && this.#sessions.size === 0 && this.#orphans.size === 0 && this.#handshakes.size === 0 && this.#gate.pending === 0 && this.#adoption.pending === 0);
  }
}
