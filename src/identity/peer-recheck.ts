// The peer's identity, checked once more just before its unit starts: same credentials, same live
// process (through its pidfd, so a recycled PID cannot pass), still inside the client's cgroup.
import { native } from '../native/index.ts';
import { ErrorCode, SessionError } from '../protocol/index.ts';
import type { PeerIdentity } from './peer.ts';

/** True when `cgroup` is `unitGroup` or lies below it. */
export function cgroupWithin(cgroup: string, unitGroup: string): boolean {
  return cgroup === unitGroup || cgroup.startsWith(`${unitGroup.replace(/\/$/, '')}/`);
}

export function recheckPeer(socketFd: number, pidfd: number, peer: PeerIdentity): void {
  const fail = (why: string) => new SessionError(ErrorCode.AUTHENTICATION, `authentication failed: ${why}`);
  const binding = native();
  const credentials = binding.peerCredentials(socketFd);
  if (credentials.uid !== peer.uid || credentials.gid !== peer.gid || credentials.pid !== peer.pid) {
    throw fail('peer credentials changed');
  }
  let pid: number;
  let cgroup: string;
  try {
    pid = binding.pidfdPid(pidfd);
    cgroup = binding.pidfdCgroup(pidfd);
  } catch {
    throw fail('peer process is gone');
  }
  if (pid !== peer.pid) throw fail('peer process changed');
  if (peer.cgroup !== null && !cgroupWithin(cgroup, peer.cgroup)) throw fail('peer left the client unit');
}
