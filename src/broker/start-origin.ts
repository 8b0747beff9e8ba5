// Who starts a session (version 3 START), for the origin a kept session's LIST entry shows (docs/protocol.md
// "SESSIONS", docs/security.md "Kept sessions"): the client service's MainPID, confirmed as the reserved
// admission slot confirms it (a look at the service that may only say no when newer than the peer, then the
// peer's pidfd naming the same process still alive), another process of its unit, or unknown.
import { SessionOrigin, type SessionOriginCode } from '../protocol/index.ts';
import type { ClientService } from '../identity/index.ts';

export interface OriginPeer {
  pid: number;
  /** The peer's start time in /proc ticks (a look older than that cannot say no). */
  startTicks: number;
}

/** The START's origin. `samePid`: whether the peer's pidfd still names `pid` (asked after the look).
 * Never rejects: a look that fails is UNKNOWN. */
export async function startOrigin(service: Pick<ClientService, 'isMainPid'> | undefined, peer: OriginPeer, samePid: () => boolean): Promise<SessionOriginCode> {
  if (!service) return SessionOrigin.UNKNOWN;
  try {
    const { main, snapshot } = await service.isMainPid(peer.pid, peer.startTicks);
    if (main) return samePid() ? SessionOrigin.MAIN_PID : SessionOrigin.UNIT_PROCESS;
    return snapshot.error ? SessionOrigin.UNKNOWN : SessionOrigin.UNIT_PROCESS;
  } catch {
    return SessionOrigin.UNKNOWN;
  }
}
