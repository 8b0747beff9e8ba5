// Who is on the other end: credentials against the configured account, the client service's
// MainPID for the reserved admission slot, and cgroup membership decided through a pidfd.
import { closeSync, readFileSync } from 'node:fs';
import type { Config } from '../config/schema.ts';
import { native, type PeerCredentials } from '../native/binding.ts';
import type { ServiceState } from '../systemd/unit-manager.ts';
import { cgroupWithin } from './peer-recheck.ts';

export function credentialsMatch(credentials: PeerCredentials, config: Config): boolean {
  return credentials.uid === config.client.uid && credentials.gid === config.client.gid;
}

/** A running instance of the client service whose state can be trusted for identity decisions. */
export function serviceIsLive(state: ServiceState, service: string): boolean {
  return (
    state.activeState === 'active' &&
    state.subState === 'running' &&
    state.controlGroup.endsWith(`/${service}`) &&
    state.invocationId.length === 16
  );
}

/** Reads the client service's state at most once a second; concurrent callers share one lookup. */
export class ClientServiceCache {
  #read: () => Promise<ServiceState>;
  #ttlMs: number;
  #cached: { at: number; state: ServiceState | undefined } | undefined;
  #pending: Promise<ServiceState | undefined> | undefined;

  constructor(read: () => Promise<ServiceState>, ttlMs = 1000) {
    this.#read = read;
    this.#ttlMs = ttlMs;
  }

  async state(now = Date.now()): Promise<ServiceState | undefined> {
    if (this.#cached && now - this.#cached.at < this.#ttlMs) return this.#cached.state;
    this.#pending ??= this.#read()
      .catch(() => undefined)
      .then((state) => {
        this.#cached = { at: Date.now(), state };
        this.#pending = undefined;
        return state;
      });
    return this.#pending;
  }
}

/**
 * A pidfd for the peer: SO_PEERPIDFD names the process that connected, even if it died and its PID
 * was reused. Where the kernel lacks it, pidfd_open(pid) plus a check that the process is older than
 * the connection (a PID reused after connect would be younger).
 */
export function peerPidfd(fd: number, pid: number, acceptedAtTicks: number): number {
  try {
    return native().peerPidfd(fd);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOPROTOOPT') throw error;
  }
  const pidfd = native().pidfdOpen(pid);
  try {
    if (processStartTicks(pid) > acceptedAtTicks) {
      throw Object.assign(new Error('peer PID was reused after connecting'), { code: 'ESRCH' });
    }
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

/** Whether the peer (through its pidfd) runs inside the live client service. */
export function peerInService(pidfd: number, state: ServiceState | undefined, service: string): boolean {
  if (!state || !serviceIsLive(state, service)) return false;
  try {
    return cgroupWithin(native().pidfdCgroup(pidfd), state.controlGroup);
  } catch {
    return false;
  }
}
