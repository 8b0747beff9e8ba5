// The checks a connection passes at accept, before it may cost anything but its refusal:
// credentials → the peer's cgroup inside the client unit → an admission slot (MainPID reserve).
//
// The earlier supervisor checked the cgroup only after HELLO, so any process of the account
// (a session's program included) could use up the admissions of the rolling minute and lock the
// agent out. Here a peer outside the client unit is refused before it takes a slot or a rate token,
// and without a D-Bus call when its cgroup cannot be the unit's (client-service.ts).
import type { Config } from '../config/index.ts';
import { closeQuietly } from '../io/index.ts';
import { native, type PeerCredentials } from '../native/index.ts';
import { ErrorCode, type ErrorCodeValue } from '../protocol/index.ts';
import { type ClientService, credentialsMatch, peerPidfd, pidfdIdentity, ticksSinceBoot } from '../identity/index.ts';
import { MAX_ROOT_CONNECTIONS, type Admission, type Slot } from './admission.ts';
import type { AcceptedConnection } from './accept-order.ts';
import { RefusalMemo, refusedFromMemo, type MemoVerdict } from './refusal-memo.ts';

export const ADMISSION_REFUSED = 'authentication admission limit reached';
export const AUTHENTICATION_FAILED = 'authentication failed';
/**
 * What a refused peer reads says what to change, and tells it nothing it does not know already: its
 * own uid/gid are not the one account served, or its own process is not in the agent's unit. Neither
 * the configured account, nor the unit's name, nor the peer's cgroup, nor why a state read failed
 * (those go to the journal only): the broker is root and the peer may be anyone with the socket group.
 */
export const WRONG_ACCOUNT_REFUSED = `${AUTHENTICATION_FAILED}: not the client account`;
export const OUTSIDE_UNIT_REFUSED = `${AUTHENTICATION_FAILED}: not inside the agent's service unit`;
/** Connections waiting on a client-service read at once; more are refused (only a slow bus fills it).
 * A provisional yes (client-service.ts) waits on nothing here: its look is awaited after HELLO. */
export const MAX_PENDING_LOOKUPS = 64;

export interface PeerAtAccept {
  credentials: PeerCredentials;
  /** The peer's pidfd (SO_PEERPIDFD or its fallback); the caller owns it once admitted. */
  pidfd: number;
  cgroup: string;
  startTicks: number;
}

export type GateResult = { admitted: true; slot: Slot; peer: PeerAtAccept } | GateRefusal;

export interface GateRefusal {
  admitted: false;
  code: ErrorCodeValue;
  message: string;
  /** Who was refused, stable across a flood's new PIDs (refusal-log.ts). */
  key: string;
  reason: string;
  detail: string;
}

export interface GateDeps {
  config: Config;
  admission: Admission;
  /** The client service, when one is configured. */
  service: ClientService | undefined;
  /** Root (uid 0) is admitted as the operator, by its own small admission, for version 3's kept-session
   * requests (principals.ts); without it root is another account, refused here. */
  admitRoot?: boolean;
}

export class AcceptGate {
  #deps: GateDeps;
  /** Refusals of peers found by the full checks, for quick() (refusal-memo.ts). */
  #memo = new RefusalMemo<object | undefined>();
  /** Connections awaiting a client-service read right now. */
  pending = 0;

  constructor(deps: GateDeps) {
    this.#deps = deps;
  }

  /**
   * The refusals decided from what is known at accept, without a pidfd, a /proc read or a wait: a wrong
   * account, credentials that could not be read, and a peer the refusal memo knows (refusal-memo.ts).
   * Undefined when the connection needs decide(); the same refusal decide() would give otherwise.
   */
  quick(connection: AcceptedConnection): GateRefusal | undefined {
    const { credentials } = connection;
    if (!credentials) return credentialsRefusal(`errno ${connection.credentialsError}`);
    if (credentials.uid === 0 && this.#deps.admitRoot) return undefined;
    if (!credentialsMatch(credentials, this.#deps.config)) return wrongAccount(credentials);
    const { service, admission, config } = this.#deps;
    if (!service || !config.requireClientUnit) return undefined;
    // A memo kept against a read much older than the peer would answer for a state long gone.
    service.freshen();
    const remembered = this.#memo.recall(credentials.pid, service.latest);
    if (!refusedFromMemo(remembered, credentials.pid, admission.ordinaryAvailable(Date.now()), service.latestMainPid)) return undefined;
    const who = `pid ${credentials.pid}`;
    if (remembered!.verdict === 'outside') return refusal(ErrorCode.AUTHENTICATION, OUTSIDE_UNIT_REFUSED, remembered!.cgroup, `not inside ${service.service}`, who);
    return refusal(ErrorCode.ADMISSION, ADMISSION_REFUSED, remembered!.cgroup, 'admission: only the MainPID\'s reserved slot is free', who);
  }

  /** Decides for a freshly accepted `fd` (never closes it); `credentials`: its SO_PEERCRED, if read already. */
  async decide(fd: number, known?: PeerCredentials): Promise<GateResult> {
    let credentials: PeerCredentials;
    try {
      credentials = known ?? native().peerCredentials(fd);
    } catch (error) {
      return credentialsRefusal((error as Error).message);
    }
    if (credentials.uid === 0 && this.#deps.admitRoot) return this.#decideRoot(fd, credentials);
    if (!credentialsMatch(credentials, this.#deps.config)) return wrongAccount(credentials);
    const peer = peerAtAccept(fd, credentials);
    if ('admitted' in peer) return peer;
    const result = await this.#decideFor(peer);
    if (!result.admitted) closeQuietly(peer.pidfd);
    return result;
  }

  /** Root, the operator: its own small admission, no client unit (it may only LIST, ATTACH and STOP_SESSION: principals.ts). */
  #decideRoot(fd: number, credentials: PeerCredentials): GateResult {
    const peer = peerAtAccept(fd, credentials);
    if ('admitted' in peer) return peer;
    const admitted = this.#deps.admission.admitRoot();
    if (!admitted.admitted) {
      closeQuietly(peer.pidfd);
      return refusal(ErrorCode.ADMISSION, ADMISSION_REFUSED, 'root', `admission: ${MAX_ROOT_CONNECTIONS} root connections at once`, `pid ${credentials.pid}`);
    }
    return { admitted: true, slot: admitted.slot, peer };
  }

  async #decideFor(peer: PeerAtAccept): Promise<GateResult> {
    const { config, admission, service } = this.#deps;
    const who = `pid ${peer.credentials.pid}`;
    if (config.requireClientUnit && service) {
      // Decided here, synchronously: a peer that cannot be inside never waits on (or counts against) a read.
      if (!service.plausible(peer.cgroup)) {
        this.#remember(peer, 'outside', service.latest);
        return refusal(ErrorCode.AUTHENTICATION, OUTSIDE_UNIT_REFUSED, peer.cgroup, `not inside ${service.service}`, who);
      }
      // A provisional yes (an old snapshot) is confirmed after HELLO, before anything is started.
      const looked = await this.#lookup(() => service.containsProvisionally(peer.cgroup, peer.startTicks));
      if (looked === 'busy') return busy(peer);
      if (!looked.inside) {
        // A read that failed decides nothing for the next connection.
        if (looked.snapshot && !looked.snapshot.error) this.#remember(peer, 'outside', looked.snapshot);
        const cause = looked.snapshot?.error ? `; its state could not be read: ${looked.snapshot.error.message}` : '';
        return refusal(ErrorCode.AUTHENTICATION, OUTSIDE_UNIT_REFUSED, peer.cgroup, `not inside ${service.service}${cause}`, who);
      }
    }
    // Only when the ordinary slots or the minute's rate are used up does it matter whether this is
    // the MainPID; then the reserved slot decides.
    if (!admission.ordinaryAvailable(Date.now()) && admission.reservedFree && service) {
      const looked = await this.#lookup(() => service.isMainPid(peer.credentials.pid, peer.startTicks));
      if (looked === 'busy') return busy(peer);
      const result = this.#admit(peer, looked.main);
      if (!result.admitted && !looked.main && !looked.snapshot.error) this.#remember(peer, 'inside-not-main', looked.snapshot);
      return result;
    }
    return this.#admit(peer, false);
  }

  /** Keeps a refusal's finding for quick(), when it was judged against the latest read (any older one
   * is no longer what quick() compares with). */
  #remember(peer: PeerAtAccept, verdict: MemoVerdict, snapshot: object | undefined): void {
    const service = this.#deps.service;
    if (!service || snapshot !== service.latest) return;
    this.#memo.remember(peer.credentials.pid, snapshot, { verdict, cgroup: peer.cgroup });
  }

  #admit(peer: PeerAtAccept, likelyMainPid: boolean): GateResult {
    const admitted = this.#deps.admission.admit(likelyMainPid, Date.now());
    if (admitted.admitted) return { admitted: true, slot: admitted.slot, peer };
    return refusal(ErrorCode.ADMISSION, ADMISSION_REFUSED, peer.cgroup, `admission: ${admitted.reason}`, `pid ${peer.credentials.pid}`);
  }

  async #lookup<T>(look: () => Promise<T>): Promise<T | 'busy'> {
    if (this.pending >= MAX_PENDING_LOOKUPS) return 'busy';
    this.pending += 1;
    try {
      return await look();
    } finally {
      this.pending -= 1;
    }
  }
}

/** The peer's pidfd (the caller's to close) and the identity read through it, or the refusal when its process
 * is gone or cannot be read. The clock is read (only where SO_PEERPIDFD is missing) in this same turn as the accept. */
function peerAtAccept(fd: number, credentials: PeerCredentials): PeerAtAccept | GateRefusal {
  let pidfd = -1;
  try {
    pidfd = peerPidfd(fd, credentials.pid, ticksSinceBoot);
    const identity = pidfdIdentity(pidfd);
    return { credentials, pidfd, cgroup: identity.cgroup, startTicks: identity.startTicks };
  } catch (error) {
    closeQuietly(pidfd);
    return identityRefusal(error, `pid ${credentials.pid}`);
  }
}

/**
 * A peer whose process could not be identified. Gone (ESRCH: it exited, or its PID was reused) is the
 * peer's doing: AUTHENTICATION, as the seeds. Anything else (no unified cgroup line, fds exhausted, a
 * fault of ours) is the server's: INTERNAL, logged as that, not as a peer that left.
 */
export function identityRefusal(error: unknown, who: string): GateRefusal {
  const message = (error as Error).message;
  if ((error as { code?: string }).code === 'ESRCH') return refusal(ErrorCode.AUTHENTICATION, AUTHENTICATION_FAILED, 'peers gone before accept', `peer process: ${message}`, who);
  return refusal(ErrorCode.INTERNAL, 'peer identity unavailable', 'peer identity unavailable', `peer identity: ${message}`, who);
}

function credentialsRefusal(cause: string): GateRefusal {
  return refusal(ErrorCode.INTERNAL, 'peer credentials unavailable', '(unknown peer)', `peer credentials: ${cause}`, '');
}

/** AUTHENTICATION, not ADMISSION: retrying cannot help a wrong account. */
function wrongAccount(credentials: PeerCredentials): GateRefusal {
  return refusal(ErrorCode.AUTHENTICATION, WRONG_ACCOUNT_REFUSED, `uid ${credentials.uid} gid ${credentials.gid}`, 'not the client account', `pid ${credentials.pid}`);
}

function busy(peer: PeerAtAccept): GateResult {
  return refusal(ErrorCode.ADMISSION, ADMISSION_REFUSED, peer.cgroup, `${MAX_PENDING_LOOKUPS} connections already wait for the client service's state`, `pid ${peer.credentials.pid}`);
}

function refusal(code: ErrorCodeValue, message: string, key: string, reason: string, detail: string): GateRefusal {
  return { admitted: false, code, message, key, reason, detail };
}
