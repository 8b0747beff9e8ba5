// Nothing fails open: what a session's network and budgets promise is confirmed on its started unit before
// the program runs, or the START is refused (NOT_ENFORCED). systemd 252 accepts MemoryMax=, TasksMax= and
// CPUQuota= where their controllers are not in the unified hierarchy (a hybrid host) and enforces none;
// it logs and ignores a failed PrivateNetwork= in a container and a missing BPF firewall. So the kernel's
// own files are read: the cgroup v2 budget files, the helper's network namespace as /proc shows it.
import { readFileSync, statfsSync } from 'node:fs';
import type { SessionSandbox } from './sandbox-request.ts';

/** statfs(2) f_type of cgroup2 (linux/magic.h). */
const CGROUP2_SUPER_MAGIC = 0x63677270;
const UINT64_MAX = 0xffff_ffff_ffff_ffffn;

/** What is read of a started unit; undefined where it cannot be read (which confirms nothing). */
export interface UnitFacts {
  /** A cgroup v2 file of the unit's own cgroup ("memory.max", "pids.max", "cpu.max"), as text. */
  cgroupFile(name: string): string | undefined;
  /** The interface names of the helper's network namespace (/proc/PID/net/dev). */
  interfaces: string[] | undefined;
  /** How many sockets of any kind live in that namespace (/proc/PID/net/{unix,tcp,tcp6,udp,udp6,raw,raw6}). */
  sockets: number | undefined;
  /** systemd's IPIngressBytes of the unit: counted (not 2^64-1) only where its BPF programs are attached. */
  ipIngressBytes: bigint | undefined;
}

/** Whether the session asks for anything to confirm. */
export function needsConfirming(sandbox: SessionSandbox): boolean {
  const { memoryBytes, tasks, cpuPercent } = sandbox.budgets;
  return sandbox.network !== 'on' || memoryBytes !== undefined || tasks !== undefined || cpuPercent !== undefined;
}

function limitOf(text: string | undefined): bigint | 'max' | undefined {
  const value = text?.trim().split(/\s+/)[0];
  if (value === 'max') return 'max';
  return value !== undefined && /^[0-9]{1,20}$/.test(value) ? BigInt(value) : undefined;
}

/** cpu.max's "QUOTA PERIOD" as µs of CPU per second (CPUQuotaPerSecUSec); undefined for "max" or unreadable text. */
function cpuPerSecond(text: string | undefined): number | undefined {
  const match = text === undefined ? null : /^([0-9]{1,15}) ([0-9]{1,15})$/.exec(text.trim());
  if (!match || Number(match[2]) === 0) return undefined;
  return (Number(match[1]) * 1_000_000) / Number(match[2]);
}

/**
 * Pure: undefined when every guarantee the sandbox asks for holds in `facts`, else what does not. A budget
 * holds when its file enforces at most the budget (an operator's stricter value is lower still).
 */
export function unconfirmed(sandbox: SessionSandbox, facts: UnitFacts): string | undefined {
  const { memoryBytes, tasks, cpuPercent } = sandbox.budgets;
  const within = (file: string, budget: number, what: string) => {
    const limit = limitOf(facts.cgroupFile(file));
    if (limit === undefined) return `the ${what} budget: this host's unified cgroup hierarchy has no ${file} for the session (the controller is absent or on cgroup v1)`;
    if (limit === 'max' || limit > BigInt(budget)) return `the ${what} budget: ${file} of the session holds ${limit}, not ${budget}`;
    return undefined;
  };
  if (memoryBytes !== undefined) {
    // The kernel keeps memory.max in whole pages, rounded down.
    const problem = within('memory.max', memoryBytes, 'memory');
    if (problem) return problem;
  }
  if (tasks !== undefined) {
    const problem = within('pids.max', tasks, 'tasks');
    if (problem) return problem;
  }
  if (cpuPercent !== undefined) {
    const perSecond = cpuPerSecond(facts.cgroupFile('cpu.max'));
    if (perSecond === undefined) return 'the CPU budget: this host\'s unified cgroup hierarchy has no cpu.max quota for the session (the controller is absent or on cgroup v1)';
    // systemd rounds the quota to its period; 1 % of slack is the same budget.
    if (perSecond > cpuPercent * 10_000 * 1.01) return `the CPU budget: cpu.max of the session allows ${perSecond / 10_000} %, not ${cpuPercent} %`;
  }
  if (sandbox.network === 'off') {
    // A namespace of its own has only its own loopback and, before the program runs, no socket at all;
    // the host's (or the supervisor's) always holds sockets: systemd's own, at least.
    if (facts.interfaces === undefined || facts.sockets === undefined) return 'network off: the session\'s network namespace cannot be read';
    if (facts.interfaces.join(',') !== 'lo') return `network off: the session sees the interfaces ${facts.interfaces.join(', ')}, not its own loopback alone`;
    if (facts.sockets !== 0) return `network off: the session's network namespace already holds ${facts.sockets} sockets, so it is not one of its own`;
  }
  if (sandbox.network === 'host-loopback') {
    if (facts.ipIngressBytes === undefined || facts.ipIngressBytes === UINT64_MAX) return 'network host-loopback: systemd attached no IP firewall to the session (no BPF firewall on this host)';
  }
  return undefined;
}

/** The unified hierarchy's mount: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one. */
function unifiedRoot(): string | undefined {
  for (const path of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']) {
    try {
      if (statfsSync(path).type === CGROUP2_SUPER_MAGIC) return path;
    } catch {
      // not mounted here
    }
  }
  return undefined;
}

function readOr(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Entries of a /proc/net table (its lines less the header). */
function tableEntries(text: string | undefined): number | undefined {
  return text === undefined ? undefined : text.split('\n').slice(1).filter((line) => line.trim() !== '').length;
}

/**
 * Reads the facts of `unit` through its main process (the helper, still waiting for its environment, so
 * nothing of the program runs yet). A pid that is not the unit's own (another pid namespace, a pid gone and
 * reused) gives no facts: its cgroup path must end in the unit's name.
 */
export function readUnitFacts(mainPid: number, unit: string, ipIngressBytes: bigint | undefined, read: (path: string) => string | undefined = readOr): UnitFacts {
  const cgroup = read(`/proc/${mainPid}/cgroup`)?.split('\n').find((line) => line.startsWith('0::'))?.slice(3);
  const own = cgroup !== undefined && cgroup.split('/').pop() === unit;
  const root = own ? unifiedRoot() : undefined;
  const net = (name: string) => (own ? read(`/proc/${mainPid}/net/${name}`) : undefined);
  const dev = net('dev');
  const interfaces = dev?.split('\n').slice(2).map((line) => line.split(':')[0]!.trim()).filter(Boolean);
  const counts = ['unix', 'tcp', 'udp', 'raw'].map((name) => tableEntries(net(name)));
  // IPv6's tables exist only where the kernel has IPv6: a missing one holds no socket.
  const v6 = ['tcp6', 'udp6', 'raw6'].map((name) => tableEntries(net(name)) ?? 0);
  return {
    cgroupFile: (name) => (root === undefined ? undefined : read(`${root}${cgroup}/${name}`)),
    interfaces,
    sockets: counts.some((count) => count === undefined) ? undefined : [...counts, ...v6].reduce<number>((sum, count) => sum + count!, 0),
    ipIngressBytes: own ? ipIngressBytes : undefined,
  };
}
