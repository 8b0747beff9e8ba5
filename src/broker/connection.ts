// One admitted connection, from HELLO to its hand-off to a worker, in the order of
// docs/architecture.md "The order of checks": HELLO and version, the peer inside the client unit,
// a session slot (waited for while a finishing or stopping session frees one), WELCOME, a provisional "inside"
// confirmed, a worker, the hand-off. Every refusal is one ERROR frame; whichever way out, the slots
// it held are freed and what it owns is closed.
import { closeQuietly, type FdSocket, IoError, passRights } from '../io/index.ts';
import { wireCodeName, type Logger } from '../log.ts';
import { native } from '../native/index.ts';
import { ErrorCode, FrameType, KEEP_VERSION, SessionError, encodeFrame, type SessionOriginCode } from '../protocol/index.ts';
import type { ClientService, Look } from '../identity/index.ts';
import type { Admission, Slot } from './admission.ts';
import type { SessionSlot, SessionSlots, SlotOwner } from './session-slots.ts';
import { AUTHENTICATION_FAILED, type PeerAtAccept } from './accept-gate.ts';
import { chooseVersion, handshakeRefusal, readHello } from './handshake.ts';
import { lookVerdict } from './identity-look.ts';
import type { RefusalReporter } from './refusal-reporter.ts';
import { refuseSocket } from './refuse.ts';
import type { WorkerHandle } from './worker-handle.ts';
import { readKeptRequest, serveKeptRequest, type KeptRequestDeps } from './kept-request.ts';
import { ROOT_START_REFUSED } from './principals.ts';
import { WRONG_ACCOUNT_REFUSED } from './accept-gate.ts';

/** What the hand-off needs of a worker (a WorkerHandle, or a fake in tests). */
export type HandOffWorker = Pick<WorkerHandle, 'child' | 'handOff' | 'shutdown'>;

export interface ConnectionDeps<W extends HandOffWorker = WorkerHandle> {
  handshakeTimeoutMs: number;
  /** The longest wait for a finishing session's slot (config stoppingSessionBoundMs): what a stopping
   * session can take until its unit is gone. The handshake deadline is paused meanwhile. */
  slotWaitMs: number;
  /** How long a start that finds no finishing slot watches for one (session-slots.ts STOP_IN_FLIGHT_MS). */
  settleMs: number;
  /** The client service, when the peer must be inside it (config.requireClientUnit). */
  clientService: Pick<ClientService, 'service' | 'containsProvisionally'> | undefined;
  /** The peer's cgroup now, through its pidfd (pidfdCgroupNow). */
  cgroupOf(pidfd: number): string;
  /** Version 3 START: who starts it (start-origin.ts), for a kept session's LIST entry; absent: unknown. */
  startOrigin?(peer: PeerAtAccept): Promise<SessionOriginCode>;
  admission: Pick<Admission, 'release' | 'refund'>;
  slots: Pick<SessionSlots, 'tryTake' | 'take' | 'max' | 'reserveOpen' | 'tryTakeReserved'>;
  /** Who the client service's MainPID is (mainPidOf): its starts may take the slot kept for it. */
  mainPid?: MainPidLook;
  refusals: Pick<RefusalReporter, 'note'>;
  takeWorker(): Promise<W>;
  /** The worker now runs the session, which holds `slot` from now on (LiveSessions.adopt); `service`: the
   * client service its peer was confirmed inside, if one was asked. */
  adopt(worker: W, slot: SessionSlot, service?: string): void;
  /** The next session's id. */
  nextId(): number;
  log: Logger;
  /** Version 3's LIST, ATTACH and STOP_SESSION (kept-request.ts); without it the broker speaks up to version 2. */
  keptRequests?: KeptRequestDeps;
}

/** The MainPID as the broker knows it: `hint` from the latest read (which slots are the MainPID's, for
 * bookkeeping only), `confirm` by a look that checks the peer's start time too (the reserved slot's). */
export interface MainPidLook {
  hint(): number | undefined;
  confirm(peer: PeerAtAccept): Promise<boolean>;
}

/** MainPidLook from the client service; a failed look confirms nothing. */
export function mainPidOf(service: Pick<ClientService, 'latestMainPid' | 'isMainPid'> | undefined): MainPidLook | undefined {
  if (!service) return undefined;
  return {
    hint: () => service.latestMainPid,
    confirm: (peer) => service.isMainPid(peer.credentials.pid, peer.startTicks).then((look) => look.main, () => false),
  };
}

/** An answer written (SESSIONS): the close once it is out (bounded), what the peer sent read away. */
async function closeAfterAnswer(socket: FdSocket, boundMs: number): Promise<void> {
  if (socket.writableLength > 0 && !socket.closed) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, boundMs);
      function done() {
        clearTimeout(timer);
        socket.off('drain', done);
        socket.off('close', done);
        resolve();
      }
      socket.once('drain', done);
      socket.once('close', done);
    });
  }
  socket.closeDrained();
}

/** Resolves (with nothing) once `socket` is closed. */
function closing(socket: FdSocket): Promise<undefined> {
  return new Promise((resolve) => (socket.closed ? resolve(undefined) : socket.once('close', () => resolve(undefined))));
}

/**
 * Serves `socket` (taken over, with the peer's pidfd and its admission `slot`) until it is handed
 * to a worker or refused. `acceptedAt`: when the client's deadline began.
 */
export async function serveConnection<W extends HandOffWorker>(socket: FdSocket, peer: PeerAtAccept, slot: Slot, acceptedAt: number, deps: ConnectionDeps<W>): Promise<void> {
  const { clientService, log, handshakeTimeoutMs } = deps;
  // The socket never surfaces errors by event here: every read rejects with them instead.
  socket.on('error', () => undefined);
  let admissionHeld = true;
  let sessionSlot: SessionSlot | undefined;
  let worker: W | undefined;
  let handedOff = false;
  let origin: Promise<SessionOriginCode> | undefined;
  const { credentials } = peer;
  let pidfd = peer.pidfd;
  const onDeadline = () => {
    if (!socket.closed) deps.refusals.note(peer.cgroup, 'handshake timeout', `pid ${credentials.pid}`);
    refuseSocket(socket, ErrorCode.HANDSHAKE_TIMEOUT, 'handshake timeout');
  };
  let deadline = setTimeout(onDeadline, handshakeTimeoutMs);
  /** Time since accept that was not the client's: waiting for a finishing session's slot or our own worker. */
  let pausedMs = 0;
  /** Stops the deadline for a wait of ours; the returned call restarts it with what is left of the client's time. */
  const pause = () => {
    clearTimeout(deadline);
    const from = Date.now();
    return () => {
      pausedMs += Date.now() - from;
      deadline = setTimeout(onDeadline, Math.max(handshakeTimeoutMs - (Date.now() - acceptedAt - pausedMs), 1));
    };
  };
  try {
    const hello = await readHello(socket);
    const version = chooseVersion(hello);
    if (version === undefined) throw new SessionError(ErrorCode.VERSION, 'unsupported protocol version');
    // The seeds' check after HELLO, through the same pidfd: the peer is still inside the live unit.
    // An answer from an old snapshot is provisional: WELCOME goes out meanwhile, and the fresh look
    // decides below, before the hand-off (nothing is started for the peer until then). Any other
    // answer is final as it is.
    // Root (the operator) is admitted for version 3's kept-session requests only (principals.ts).
    const root = credentials.uid === 0;
    if (root && version < KEEP_VERSION) throw new SessionError(ErrorCode.AUTHENTICATION, WRONG_ACCOUNT_REFUSED);
    let cgroup: string | null = null;
    let unconfirmed: Promise<Look> | undefined;
    if (clientService && !root) {
      const look = await clientService.containsProvisionally(deps.cgroupOf(pidfd), peer.startTicks);
      cgroup = insideOrRefuse(look, peer, clientService.service, deps.refusals);
      if (look.provisional) unconfirmed = look.confirmed;
    }
    const owner: SlotOwner = deps.mainPid?.hint() === credentials.pid ? 'main' : 'other';
    const takeSlot = async (): Promise<SessionSlot | undefined> => {
      let taken = deps.slots.tryTake(owner);
      // Every slot held, some by other processes: the MainPID's start takes the one kept for it
      // (session-slots.ts) rather than wait behind, or be refused for, its own tools' sessions.
      if (!taken && deps.slots.reserveOpen && deps.mainPid && (await deps.mainPid.confirm(peer))) taken = deps.slots.tryTakeReserved();
      if (!taken) {
        // Waiting for a stopping session's slot is not the client's time: its deadline pauses, and the
        // wait has its own bound (what a stopping session can take). No more connections wait than
        // slots are finishing (session-slots.ts), and each still holds its admission place.
        const resume = pause();
        taken = await waitForSlot(socket, deps, owner);
        resume();
      }
      return taken;
    };
    const welcome = async (): Promise<boolean> => {
      // WELCOME before the worker: the client's START is on its way while a spare still starts. Its
      // descriptor may come from now on (the worker takes that right away again once START is in).
      passRights(socket.fd, true);
      socket.writeUrgent(encodeFrame({ type: 'welcome', version }));
      // A send that failed outright (EPIPE: the peer closed after HELLO) empties the queue and is
      // reported only a tick later, so it is asked for here: its peer-gone code makes it the client's
      // doing. A fresh socket takes seven bytes at once; bytes still queued mean the peer is gone too.
      if (socket.writeFailure) throw socket.writeFailure;
      if (socket.writableLength > 0) throw new SessionError(ErrorCode.INTERNAL, 'could not send WELCOME');
      if (unconfirmed && clientService) {
        // Within the client's deadline still: a bus that does not answer is not a wait without end, and
        // a connection closed meanwhile (deadline, shutdown) frees its slots now, not when the look ends.
        const look = await Promise.race([unconfirmed, closing(socket)]);
        if (socket.closed || !look) return false;
        cgroup = insideOrRefuse(look, peer, clientService.service, deps.refusals);
      }
      return true;
    };
    if (version < KEEP_VERSION) {
      sessionSlot = await takeSlot();
      // Closed while it waited (shutdown): answered already, the finally frees the rest.
      if (socket.closed) return;
      // A client that went while it waited is gone, not refused for the limit (and kept no place).
      if (!sessionSlot && socket.hungUp) throw new IoError('PEER_GONE', 'the client hung up while it waited for a session slot');
      if (!sessionSlot) throw new SessionError(ErrorCode.SESSION_LIMIT, `session limit reached (${deps.slots.max})`);
      if (!(await welcome())) return;
    } else {
      // Version 3: WELCOME takes no slot; the request decides (docs/protocol.md "Version 3", order).
      if (!(await welcome())) return;
      const type = await socket.peekByte();
      if (type !== FrameType.START) {
        const frame = await readKeptRequest(socket);
        // The request is whole: the client's deadline is over, and no descriptor belongs on this
        // connection any more (a worker takes it over for its data phase, which takes none).
        clearTimeout(deadline);
        passRights(socket.fd, false);
        if (!deps.keptRequests) throw new SessionError(ErrorCode.INTERNAL, 'kept sessions are not served here');
        // The pidfd is serveKeptRequest's from here, whatever happens (handed to a worker, or closed).
        const owned = pidfd;
        pidfd = -1;
        // The agent's own (or root's) request spends no admission of the minute: the agent polling LIST
        // must not lock its tools' STARTs out.
        const handed = await serveKeptRequest(socket, frame, peer, owned, deps.keptRequests, () => deps.admission.refund(slot, acceptedAt));
        if (handed) socket.close();
        else await closeAfterAnswer(socket, deps.handshakeTimeoutMs);
        return;
      }
      if (root) throw new SessionError(ErrorCode.NOT_PERMITTED, ROOT_START_REFUSED);
      // Looked at while the slot is taken; it never rejects, and the pidfd stays ours until it is in.
      origin = deps.startOrigin?.(peer);
      sessionSlot = await takeSlot();
      if (socket.closed) return;
      if (!sessionSlot && socket.hungUp) throw new IoError('PEER_GONE', 'the client hung up while it waited for a session slot');
      if (!sessionSlot) throw new SessionError(ErrorCode.SESSION_LIMIT, `session limit reached (${deps.slots.max})`);
    }
    deps.admission.release(slot);
    admissionHeld = false;
    // The deadline pauses while we wait for a worker: with many starts at once, spare workers
    // (a Node start each) can take longer than the whole deadline, and that is not the client's
    // doing; without the pause those clients got HANDSHAKE_TIMEOUT, or a worker with no time left.
    const resume = pause();
    try {
      worker = await deps.takeWorker();
    } catch (error) {
      throw new SessionError(ErrorCode.INTERNAL, `no worker: ${(error as Error).message}`, { cause: error });
    }
    // Shutdown began (or the client went) while a worker was found: the finally gives it back.
    if (socket.closed) return;
    resume();
    const startedBy = await origin;
    if (socket.closed) return;
    const handed = native().dupCloexec(socket.fd);
    const remaining = handshakeTimeoutMs - (Date.now() - acceptedAt - pausedMs);
    try {
      // Takes `handed` and the pidfd, sent or not: a copy closed twice could be someone else's by then.
      worker.handOff(deps.nextId(), handed, pidfd, { ...credentials, cgroup, ...(startedBy ? { origin: startedBy } : {}) }, Math.max(remaining, 1), version);
    } catch (error) {
      // Not adopted: the slot is freed below and the worker, told nothing more, ends by itself.
      throw new SessionError(ErrorCode.INTERNAL, `hand-off to worker ${worker.child.pid} failed: ${(error as Error).message}`, { cause: error });
    } finally {
      pidfd = -1;
    }
    handedOff = true;
    deps.adopt(worker, sessionSlot, cgroup !== null ? clientService?.service : undefined);
    socket.close();
  } catch (error) {
    const refusal = handshakeRefusal(error);
    // Internal causes (a worker that could not start, EMFILE…) are logged each time as warnings;
    // a client's own failures go through the per-episode refusal log.
    if (!socket.closed && refusal.internal) log('warning', `pid ${credentials.pid}: ${refusal.log}`, { REFUSAL: wireCodeName(refusal.error.wireCode), PEER_PID: credentials.pid, PEER_UID: credentials.uid });
    else if (!socket.closed) deps.refusals.note(peer.cgroup, refusal.log, `pid ${credentials.pid}`);
    refuseSocket(socket, refusal.error.wireCode, refusal.error.message);
  } finally {
    clearTimeout(deadline);
    if (admissionHeld) deps.admission.release(slot);
    if (!handedOff) {
      sessionSlot?.release();
      // A worker that got no session ends at its first message.
      worker?.shutdown();
      // Ours is the last copy: nothing the peer queued may be left for the kernel to release here.
      if (!socket.closeDrained()) log('warning', `pid ${credentials.pid}: its connection queues more descriptors than the close threads keep up with (or a file system that never answers holds them): it is closed once they are read away`);
    }
    if (pidfd >= 0) closeQuietly(pidfd);
  }
}

/**
 * Every slot is held. One whose session is finishing (its end decided: its last frame going out, or a
 * STOP's steps under way; its unit being stopped and collected) comes free within slotWaitMs, the most
 * the worker's stop steps and the unit's stop can take: a start right after other sessions' ends (an
 * agent's next command on its EXIT, a terminal opened as others are removed) waits for it rather than
 * being refused. With no slot finishing it first watches settleMs for one (a STOP on its way). The
 * wait ends with a slot, or at that bound (then SESSION_LIMIT, as without a wait),
 * or when the connection closes (shutdown's SHUTDOWN) or the client hangs up.
 */
async function waitForSlot(socket: FdSocket, deps: Pick<ConnectionDeps, 'slots' | 'slotWaitMs' | 'settleMs'>, owner: SlotOwner): Promise<SessionSlot | undefined> {
  // A hang-up (reported during HELLO's read, or while it waits) ends the wait: a connection whose
  // client has gone must not keep the place a live start would wait in.
  if (socket.hungUp) return undefined;
  const giveUp = new AbortController();
  const timer = setTimeout(() => giveUp.abort(), deps.slotWaitMs);
  const hungUp = () => giveUp.abort();
  socket.once('hangup', hungUp);
  void closing(socket).then(() => giveUp.abort());
  try {
    return await deps.slots.take(giveUp.signal, deps.settleMs, owner);
  } finally {
    clearTimeout(timer);
    socket.off('hangup', hungUp);
  }
}

/** The client unit's cgroup when `look` puts the peer inside it; else the refusal, noted (identity-look.ts). */
function insideOrRefuse(look: Look, peer: PeerAtAccept, service: string, refusals: ConnectionDeps['refusals']): string {
  const verdict = lookVerdict(look, service);
  if (verdict.inside) return verdict.cgroup;
  refusals.note(peer.cgroup, verdict.reason, `pid ${peer.credentials.pid}`);
  throw new SessionError(ErrorCode.AUTHENTICATION, AUTHENTICATION_FAILED);
}
