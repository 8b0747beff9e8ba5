// Who is on the other end: credentials against the configured account, a pidfd that names the
// very process that connected, and when that process started.
import { closeSync, readFileSync } from 'node:fs';
import type { Config } from '../config/index.ts';
import { native, type NativeBinding, type PeerCredentials } from '../native/index.ts';

export function credentialsMatch(credentials: PeerCredentials, config: Config): boolean {
  return credentials.uid === config.client.uid && credentials.gid === config.client.gid;
}

/**
 * A pidfd for the peer. SO_PEERPIDFD (Linux 6.5) names the very process that connected, even if it
 * has died and its PID was reused since.
 *
 * Where the kernel lacks it (ENOPROTOOPT; Debian 12 ships 6.1) the fallback is pidfd_open() on
 * SO_PEERCRED's PID, and it guarantees exactly this: the pidfd names a process that is alive now,
 * has that PID, and had started by `acceptedAtTicks` (to the 10 ms of a clock tick). It cannot prove
 * that this process is the one that connected: if that one exited and its PID was handed to a new
 * process between connect and accept (under socket activation that window includes the broker's
 * start-up), the newcomer passes. A reuse needs the kernel to cycle through every free PID
 * (kernel.pid_max, 4194304 under systemd) within that window, and the newcomer runs as the same
 * account (credentials are checked separately); the cgroup check then judges the newcomer, so a
 * process outside the client unit is still refused. Later checks use the pidfd, so from accept on
 * nothing can be swapped. `binding` is for tests that force the fallback.
 */
export function peerPidfd(fd: number, pid: number, acceptedAtTicks: number | (() => number), binding: PidfdBinding = native()): number {
  try {
    return binding.peerPidfd(fd);
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Linux 6.5-6.14 fail SO_PEERPIDFD for a peer that has exited with EINVAL (pidfd_prepare), not ESRCH.
    if (code === 'EINVAL') throw Object.assign(new Error(`peer process exited before accept (${(error as Error).message})`, { cause: error }), { code: 'ESRCH' });
    if (code !== 'ENOPROTOOPT') throw error;
  }
  // A function is read only here: the clock is needed by the fallback alone (a /proc read per connection otherwise).
  return pidfdStartedBy(binding, pid, typeof acceptedAtTicks === 'function' ? acceptedAtTicks() : acceptedAtTicks);
}

/** What peerPidfd needs of the addon. */
export type PidfdBinding = Pick<NativeBinding, 'peerPidfd' | 'pidfdOpen' | 'pidfdPid'>;

/** pidfd_open(pid), kept only if that process started by `ticks`; the start time is read after the
 * pidfd is open and the pidfd is checked to still name `pid`, so the process read is the one held. */
function pidfdStartedBy(binding: PidfdBinding, pid: number, ticks: number): number {
  const pidfd = binding.pidfdOpen(pid);
  try {
    let started: number;
    try {
      started = processStartTicks(pid);
    } catch (error) {
      // Its /proc entry went with it: the peer is gone, as a pidfd would say (ESRCH).
      if ((error as { code?: string }).code === 'ENOENT') throw Object.assign(new Error('peer process exited while it was checked'), { code: 'ESRCH' });
      throw error;
    }
    // A pidfd of a process that has exited reports no PID (ESRCH): the /proc read may be a newcomer's.
    if (binding.pidfdPid(pidfd) !== pid) throw Object.assign(new Error('peer process changed while it was checked'), { code: 'ESRCH' });
    if (started > ticks) throw Object.assign(new Error('peer PID was reused after connecting'), { code: 'ESRCH' });
  } catch (error) {
    closeSync(pidfd);
    throw error;
  }
  return pidfd;
}

/** Now, in the clock ticks of /proc/PID/stat start times (USER_HZ is 100 on Linux). */
export function ticksSinceBoot(): number {
  return Math.ceil(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
}

/** Field 22 of /proc/PID/stat: start time in clock ticks since boot. */
export function processStartTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may contain spaces and parentheses: fields are counted after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[19]);
}

/** The peer's cgroup and start time through its pidfd, both confirmed to belong to that live process. */
export function pidfdIdentity(pidfd: number): { pid: number; cgroup: string; startTicks: number } {
  // One call: both are read by PID, then the pidfd's process is confirmed alive with the same PID,
  // so neither can be a successor's.
  return native().pidfdIdentity(pidfd);
}
