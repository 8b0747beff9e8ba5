// The accept-broker: identity, admission and hand-off for every connection, in the earlier
// supervisor's order; session slots; idle exit; shutdown. Nothing after start-up is fatal.
import { unitStopWaitMs, type Config } from '../config/schema.ts';
import { FdSocket } from '../io/fd-socket.ts';
import { closeQuietly } from '../io/fds.ts';
import { passRights } from '../io/pass-rights.ts';
import { wireCodeName, type Logger } from '../log.ts';
import { native } from '../native/binding.ts';
import { ErrorCode, encodeFrame, type ErrorCodeValue } from '../protocol/index.ts';
import type { Units } from '../systemd/bus-session.ts';
import { SessionError } from '../protocol/session-error.ts';
import { Admission, SessionSlots, type Slot } from './admission.ts';
import { refuseNow, sendError } from './refuse.ts';
import { chooseVersion, handshakeRefusal, readHello } from './handshake.ts';
import type { Listener } from './listener.ts';
import { ClientService, pidfdCgroupNow, type Look } from '../identity/client-service.ts';
import { AcceptGate, AUTHENTICATION_FAILED, type PeerAtAccept } from './accept-gate.ts';
import { RefusalReporter } from './refusal-reporter.ts';
import { lookVerdict } from './identity-look.ts';
import type { WorkerHandle } from './worker-handle.ts';
import type { WorkerPool } from './worker-pool.ts';
import { AcceptLoop } from './accept-loop.ts';
import { LiveSessions } from './live-sessions.ts';
import { Orphans } from './orphans.ts';
import { Tarpit } from './tarpit.ts';

export { ADMISSION_REFUSED } from './accept-gate.ts';

/** Resolves (with nothing) once `socket` is closed. */
function closing(socket: FdSocket): Promise<undefined> {
  return new Promise((resolve) => (socket.closed ? resolve(undefined) : socket.once('close', () => resolve(undefined))));
}

export interface BrokerDeps {
  config: Config;
  listener: Listener;
  manager: Units;
  pool: WorkerPool;
  log: Logger;
  notify(state: string): void;
}

export class Broker {
  #deps: BrokerDeps;
  #admission: Admission;
  #slots: SessionSlots;
  #service: ClientService | undefined;
  #gate: AcceptGate;
  #refusals: RefusalReporter;
  #handshakes = new Set<FdSocket>();
  #sessions: LiveSessions;
  /** Units of an earlier run still being stopped; each holds a session slot until it is gone. */
  #orphans: Orphans;
  #accepts: AcceptLoop;
  /** Refusals at accept, answered after a short delay (tarpit.ts). */
  #tarpit = new Tarpit<{ fd: number; code: ErrorCodeValue; message: string }>(({ fd, code, message }) => this.#refuseFd(fd, code, message));
  #idleTimer: NodeJS.Timeout | undefined;
  #nextId = 1;
  #statusPending = false;
  #lastStatus = '';
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
    this.#sessions = new LiveSessions({
      units: deps.manager,
      slots: this.#slots,
      log: deps.log,
      reapTimes: { stopWaitMs: unitStopWaitMs(deps.config), killWaitMs: limits.operationTimeoutMs },
      giveBack: (worker) => deps.pool.giveBack(worker),
      changed: () => this.#changed(),
      slotFreed: () => this.#status(),
    });
    this.#orphans = new Orphans({
      units: deps.manager,
      slots: this.#slots,
      log: deps.log,
      prefix: `${deps.config.unitPrefix}session-`,
      stopTimeoutSec: deps.config.session.stopTimeoutSec,
      killWaitMs: limits.operationTimeoutMs,
      changed: () => this.#changed(),
    });
    this.#accepts = new AcceptLoop(deps.listener.fd, (fd) => this.#accepted(fd), deps.log);
    if (client.service) this.#service = new ClientService(client.service, () => deps.manager.serviceState(client.service!));
    this.#gate = new AcceptGate({ config: deps.config, admission: this.#admission, service: this.#service });
  }

  /**
   * Serves at once; what an earlier run left behind is stopped meanwhile, all in parallel and in
   * the background, each orphan holding a session slot until it is gone. Failing to list the
   * orphans is fatal (nothing is accepted): their slots could not be counted.
   */
  async start(): Promise<void> {
    const { config, log, pool, listener } = this.#deps;
    for (const unit of await this.#orphans.list()) this.#orphans.reap(unit);
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
      claimed: () => this.#sessions.claimed(),
      sessions: () => this.#sessions.size,
      stopping: () => this.#stopping,
    };
    return this.#orphans.recheck(owner, this.#deps.config.limits.operationTimeoutMs);
  }

  /** SIGTERM: accept nothing more, end every session and wait until their units are gone. */
  shutdown(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#deps.notify('STOPPING=1');
    this.#stopAccepting();
    for (const socket of this.#handshakes) this.#refuse(socket, ErrorCode.SHUTDOWN, 'supervisor is shutting down');
    this.#sessions.shutdown();
    this.#maybeFinish();
  }

  #stopAccepting(): void {
    this.#accepts.close();
    this.#tarpit.close();
    this.#refusals.flush();
    clearTimeout(this.#idleTimer);
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

  #accepted(fd: number): void {
    // One queued before the listener refused descriptors (the connection that started us) takes
    // none from now on either; what it already queued is drained at its last close.
    passRights(fd, false);
    clearTimeout(this.#idleTimer);
    this.#handle(fd).catch((error: Error) => this.#deps.log('error', `connection: ${error.message}`));
  }

  async #handle(fd: number): Promise<void> {
    try {
      await this.#admit(fd);
    } finally {
      // Every way out, refused ones included, may leave the broker idle or let a shutdown finish.
      this.#changed();
    }
  }

  /** Identity and admission at accept (accept-gate.ts); owns `fd` until #authenticate takes it. */
  async #admit(fd: number): Promise<void> {
    const acceptedAt = Date.now();
    const decision = await this.#gate.decide(fd);
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

  async #authenticate(socket: FdSocket, peer: PeerAtAccept, slot: Slot, acceptedAt: number): Promise<void> {
    const { config, log, pool } = this.#deps;
    // The socket never surfaces errors by event here: every read rejects with them instead.
    socket.on('error', () => undefined);
    this.#handshakes.add(socket);
    this.#status();
    let admissionHeld = true;
    let sessionSlot = false;
    let worker: WorkerHandle | undefined;
    let handedOff = false;
    const { credentials } = peer;
    let pidfd = peer.pidfd;
    const onDeadline = () => {
      if (!socket.closed) this.#refusals.note(peer.cgroup, 'handshake timeout', `pid ${credentials.pid}`);
      this.#refuse(socket, ErrorCode.HANDSHAKE_TIMEOUT, 'handshake timeout');
    };
    let deadline = setTimeout(onDeadline, config.limits.handshakeTimeoutMs);
    /** The client's time so far; waiting for our own worker is not the client's time. */
    let clientMs = 0;
    try {
      const hello = await readHello(socket);
      const version = chooseVersion(hello);
      if (version === undefined) throw new SessionError(ErrorCode.VERSION, 'unsupported protocol version');
      // The seeds' check after HELLO, through the same pidfd: the peer is still inside the live unit.
      // An answer from an old snapshot is provisional: WELCOME goes out meanwhile, and the fresh look
      // decides below, before the hand-off (nothing is started for the peer until then).
      let identity: Promise<Look> | undefined;
      if (config.requireClientUnit && this.#service) {
        const look = await this.#service.containsProvisionally(pidfdCgroupNow(pidfd), peer.startTicks);
        this.#insideOrRefuse(look, peer);
        identity = look.confirmed;
      }
      if (!this.#slots.tryTake()) throw new SessionError(ErrorCode.SESSION_LIMIT, 'session limit reached');
      sessionSlot = true;
      // WELCOME before the worker: the client's START is on its way while a spare still starts. Its
      // descriptor may come from now on (the worker takes that right away again once START is in).
      passRights(socket.fd, true);
      socket.writeUrgent(encodeFrame({ type: 'welcome', version }));
      // A fresh socket takes seven bytes at once; anything else means the peer is already gone.
      if (socket.writableLength > 0) throw new SessionError(ErrorCode.INTERNAL, 'could not send WELCOME');
      // Within the client's deadline still: a bus that does not answer is not a wait without end, and
      // a connection closed meanwhile (deadline, shutdown) frees its slots now, not when the look ends.
      const look = identity ? await Promise.race([identity, closing(socket)]) : undefined;
      if (socket.closed) return;
      const cgroup = look ? this.#insideOrRefuse(look, peer) : null;
      this.#admission.release(slot);
      admissionHeld = false;
      // The deadline pauses while we wait for a worker: with many starts at once, spare workers
      // (a Node start each) can take longer than the whole deadline, and that is not the client's
      // doing; without the pause those clients got HANDSHAKE_TIMEOUT, or a worker with no time left.
      clearTimeout(deadline);
      clientMs = Date.now() - acceptedAt;
      try {
        worker = await pool.take();
      } catch (error) {
        throw new SessionError(ErrorCode.INTERNAL, `no worker: ${(error as Error).message}`);
      }
      // Shutdown began (or the client went) while a worker was found: the finally gives it back.
      if (socket.closed) return;
      deadline = setTimeout(onDeadline, Math.max(config.limits.handshakeTimeoutMs - clientMs, 1));
      const resumedAt = Date.now();
      const handed = native().dupCloexec(socket.fd);
      const remaining = config.limits.handshakeTimeoutMs - clientMs - (Date.now() - resumedAt);
      try {
        // Takes `handed` and the pidfd, sent or not: a copy closed twice could be someone else's by then.
        worker.handOff(this.#nextId++, handed, pidfd, { ...credentials, cgroup }, Math.max(remaining, 1), version);
      } catch (error) {
        // Not adopted: the slot is freed below and the worker, told nothing more, ends by itself.
        throw new SessionError(ErrorCode.INTERNAL, `hand-off to worker ${worker.child.pid} failed: ${(error as Error).message}`, { cause: error });
      } finally {
        pidfd = -1;
      }
      handedOff = true;
      this.#sessions.adopt(worker);
      socket.close();
    } catch (error) {
      const refusal = handshakeRefusal(error);
      // Internal causes (a worker that could not start, EMFILE…) are logged each time as warnings;
      // a client's own failures go through the per-episode refusal log.
      if (!socket.closed && refusal.internal) log('warning', `pid ${credentials.pid}: ${refusal.log}`, { REFUSAL: wireCodeName(refusal.error.wireCode), PEER_PID: credentials.pid, PEER_UID: credentials.uid });
      else if (!socket.closed) this.#refusals.note(peer.cgroup, refusal.log, `pid ${credentials.pid}`);
      this.#refuse(socket, refusal.error.wireCode, refusal.error.message);
    } finally {
      clearTimeout(deadline);
      if (admissionHeld) this.#admission.release(slot);
      if (!handedOff) {
        if (sessionSlot) this.#slots.release();
        // A worker that got no session ends at its first message.
        worker?.shutdown();
        // Ours is the last copy: nothing the peer queued may be left for the kernel to release here.
        if (!socket.closeDrained()) log('warning', `pid ${credentials.pid}: its connection queues more descriptors than the close threads keep up with (or a file system that never answers holds them): it is closed once they are read away`);
      }
      if (pidfd >= 0) closeQuietly(pidfd);
      this.#handshakes.delete(socket);
    }
  }

  /** The client unit's cgroup when `look` puts the peer inside it; else the refusal, noted (identity-look.ts). */
  #insideOrRefuse(look: Look, peer: PeerAtAccept): string {
    const verdict = lookVerdict(look, this.#deps.config.client.service ?? '');
    if (verdict.inside) return verdict.cgroup;
    this.#refusals.note(peer.cgroup, verdict.reason, `pid ${peer.credentials.pid}`);
    throw new SessionError(ErrorCode.AUTHENTICATION, AUTHENTICATION_FAILED);
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

  #refuse(socket: FdSocket, code: ErrorCodeValue, message: string): void {
    if (socket.closed) return;
    sendError(socket.fd, code, message);
    socket.closeDrained();
  }

  /** STATUS= once per turn of the event loop at most, however many connections changed in it. */
  #status(): void {
    if (this.#statusPending) return;
    this.#statusPending = true;
    setImmediate(() => {
      this.#statusPending = false;
      const orphans = this.#orphans.size ? `, ${this.#orphans.size} orphans stopping` : '';
      const status = `STATUS=${this.#sessions.size} sessions, ${this.#handshakes.size} handshakes${orphans}`;
      // A refused connection changes none of it: under a flood, one datagram to PID 1 per turn otherwise.
      if (status === this.#lastStatus) return;
      this.#lastStatus = status;
      this.#deps.notify(status);
    });
  }

  #checkIdle(): void {
    const idleMs = this.#deps.config.limits.idleExitMs;
    if (this.#stopping || idleMs === 0 || this.#sessions.size > 0 || this.#orphans.size > 0 || this.#handshakes.size > 0 || this.#gate.pending > 0) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#deps.log('info', `idle for ${idleMs} ms; exiting (systemd keeps the socket)`);
      this.shutdown();
    }, idleMs);
  }
}
