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

export type GateResult =
  | { admitted: true; slot: Slot; peer: PeerAtAccept }
  | {
      admitted: false;
      code: ErrorCodeValue;
      message: string;
      /** Who was refused, stable across a flood's new PIDs (refusal-log.ts). */
      key: string;
      reason: string;
      detail: string;
    };

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
  /** Connections awaiting a client-service read right now. */
  pending = 0;

  constructor(deps: GateDeps) {
    this.#deps = deps;
  }

  /** Decides for a freshly accepted `fd` (never closes it). */
  async decide(fd: number): Promise<GateResult> {
    const { config } = this.#deps;
    let credentials: PeerCredentials;
    try {
      credentials = native().peerCredentials(fd);
    } catch (error) {
      return refusal(ErrorCode.INTERNAL, 'peer credentials unavailable', '(unknown peer)', `peer credentials: ${(error as Error).message}`, '');
    }
    const who = `pid ${credentials.pid}`;
    if (credentials.uid === 0 && this.#deps.admitRoot) return this.#decideRoot(fd, credentials);
    if (!credentialsMatch(credentials, config)) {
      // AUTHENTICATION, not ADMISSION: retrying cannot help a wrong account.
      return refusal(ErrorCode.AUTHENTICATION, WRONG_ACCOUNT_REFUSED, `uid ${credentials.uid} gid ${credentials.gid}`, 'not the client account', who);
    }
    let pidfd = -1;
    let identity;
    try {
      // The clock is read (only where SO_PEERPIDFD is missing) in this same turn as the accept.
      pidfd = peerPidfd(fd, credentials.pid, ticksSinceBoot);
      identity = pidfdIdentity(pidfd);
    } catch (error) {
      closeQuietly(pidfd);
      return identityRefusal(error, who);
    }
    const peer: PeerAtAccept = { credentials, pidfd, cgroup: identity.cgroup, startTicks: identity.startTicks };
    const result = await this.#decideFor(peer);
    if (!result.admitted) closeQuietly(pidfd);
    return result;
  }

  /** Root, the operator: its own small admission, no client unit (it may only LIST, ATTACH and STOP_SESSION: principals.ts). */
  #decideRoot(fd: number, credentials: PeerCredentials): GateResult {
    const who = `pid ${credentials.pid}`;
    let pidfd = -1;
    let identity;
    try {
      pidfd = peerPidfd(fd, credentials.pid, ticksSinceBoot);
      identity = pidfdIdentity(pidfd);
    } catch (error) {
      closeQuietly(pidfd);
      return identityRefusal(error, who);
    }
    const admitted = this.#deps.admission.admitRoot();
    if (!admitted.admitted) {
      closeQuietly(pidfd);
      return refusal(ErrorCode.ADMISSION, ADMISSION_REFUSED, 'root', `admission: ${MAX_ROOT_CONNECTIONS} root connections at once`, who);
    }
    return { admitted: true, slot: admitted.slot, peer: { credentials, pidfd, cgroup: identity.cgroup, startTicks: identity.startTicks } };
  }

  async #decideFor(peer: PeerAtAccept): Promise<GateResult> {
    const { config, admission, service } = this.#deps;
    const who = `pid ${peer.credentials.pid}`;
    if (config.requireClientUnit && service) {
      // Decided here, synchronously: a peer that cannot be inside never waits on (or counts against) a read.
      if (!service.plausible(peer.cgroup)) {
        return refusal(ErrorCode.AUTHENTICATION, OUTSIDE_UNIT_REFUSED, peer.cgroup, `not inside ${service.service}`, who);
      }
      // A provisional yes (an old snapshot) is confirmed after HELLO, before anything is started.
      const looked = await this.#lookup(() => service.containsProvisionally(peer.cgroup, peer.startTicks));
      if (looked === 'busy') return busy(peer);
      if (!looked.inside) {
        const cause = looked.snapshot?.error ? `; its state could not be read: ${looked.snapshot.error.message}` : '';
        return refusal(ErrorCode.AUTHENTICATION, OUTSIDE_UNIT_REFUSED, peer.cgroup, `not inside ${service.service}${cause}`, who);
      }
    }
    // Only when the ordinary slots or the minute's rate are used up does it matter whether this is
    // the MainPID; then the reserved slot decides.
    if (!admission.ordinaryAvailable(Date.now()) && admission.reservedFree && service) {
      const looked = await this.#lookup(() => service.isMainPid(peer.credentials.pid, peer.startTicks));
      if (looked === 'busy') return busy(peer);
      return this.#admit(peer, looked.main);
    }
    return this.#admit(peer, false);
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

/**
 * A peer whose process could not be identified. Gone (ESRCH: it exited, or its PID was reused) is the
 * peer's doing: AUTHENTICATION, as the seeds. Anything else (no unified cgroup line, fds exhausted, a
 * fault of ours) is the server's: INTERNAL, logged as that, not as a peer that left.
 */
export function identityRefusal(error: unknown, who: string): GateResult {
  const message = (error as Error).message;
  if ((error as { code?: string }).code === 'ESRCH') return refusal(ErrorCode.AUTHENTICATION, AUTHENTICATION_FAILED, 'peers gone before accept', `peer process: ${message}`, who);
  return refusal(ErrorCode.INTERNAL, 'peer identity unavailable', 'peer identity unavailable', `peer identity: ${message}`, who);
}

function busy(peer: PeerAtAccept): GateResult {
  return refusal(ErrorCode.ADMISSION, ADMISSION_REFUSED, peer.cgroup, `${MAX_PENDING_LOOKUPS} connections already wait for the client service's state`, `pid ${peer.credentials.pid}`);
}

function refusal(code: ErrorCodeValue, message: string, key: string, reason: string, detail: string): GateResult {
  return { admitted: false, code, message, key, reason, detail };
}
