// What a host must have, as pure checks over facts a probe gathered: each failed check is one sentence.
import { cgroupProblem, type CgroupFacts } from './cgroups.ts';

/** The oldest systemd tried: transient units with fd stdio, AddRef and CollectMode (docs/operations.md). */
export const MIN_SYSTEMD = 252;
/** close_range(2) arrived in 5.9, pidfd_getfd(2) in 5.6; SO_PEERPIDFD (6.5) has a documented fallback. */
export const MIN_KERNEL: [number, number] = [5, 9];
export const PEERPIDFD_KERNEL: [number, number] = [6, 5];

export interface NodeFacts {
  path: string;
  /** e.g. "v20.20.2"; undefined when it could not be run. */
  version: string | undefined;
  /** Owner uid and mode of the file and of each directory above it. */
  chain: { path: string; uid: number; mode: number }[];
}

export interface HostFacts {
  euid: number;
  /** From `systemctl --version`; undefined when systemctl is missing. */
  systemdVersion: number | undefined;
  /** PID 1 is systemd (/run/systemd/system exists, as sd_booted(3) checks). */
  systemdRunning: boolean;
  kernel: string;
  node: NodeFacts;
  /** The cgroup layout's facts (cgroups.ts): a legacy host is refused, a hybrid one warned about. */
  cgroups: CgroupFacts;
}

export function parseVersion(text: string): number[] | undefined {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(text.trim());
  return match ? [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)] : undefined;
}

function atLeast(version: number[], min: number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    if ((version[i] ?? 0) !== min[i]) return (version[i] ?? 0) > min[i]!;
  }
  return true;
}

/** The package's engines range in the one form we write (">=N[.M[.P]]"); anything else is refused. */
export function nodeSatisfies(version: string, range: string): boolean {
  const min = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec(range.trim());
  const have = parseVersion(version);
  if (!min || !have) return false;
  return atLeast(have, min[1]!.split('.').map(Number));
}

/** Problems with the host for running the supervisor (empty when fine). */
export function hostProblems(facts: HostFacts, nodeRange: string): string[] {
  const problems: string[] = [];
  if (facts.euid !== 0) problems.push('must run as root');
  if (!facts.systemdRunning) problems.push('systemd is not running as PID 1 (no /run/systemd/system)');
  if (facts.systemdVersion === undefined) problems.push('cannot tell the systemd version (systemctl --version)');
  else if (facts.systemdVersion < MIN_SYSTEMD) problems.push(`systemd ${facts.systemdVersion} is older than the minimum ${MIN_SYSTEMD}`);
  const kernel = parseVersion(facts.kernel);
  if (!kernel || !atLeast(kernel, MIN_KERNEL)) problems.push(`kernel ${facts.kernel} is older than the minimum ${MIN_KERNEL.join('.')}`);
  const cgroups = cgroupProblem(facts.cgroups);
  if (cgroups) problems.push(cgroups);
  problems.push(...nodeProblems(facts.node, nodeRange));
  return problems;
}

export function nodeProblems(node: NodeFacts, range: string): string[] {
  const problems: string[] = [];
  if (!node.path.startsWith('/')) problems.push(`Node path ${node.path} is not absolute`);
  if (node.version === undefined) problems.push(`cannot run ${node.path} --version`);
  else if (!nodeSatisfies(node.version, range)) {
    problems.push(`Node ${node.version} at ${node.path} does not satisfy ${range} (Debian 12 ships Node 18: install Node 20 or newer, e.g. from NodeSource's or nodejs.org's packages, and pass --node PATH)`);
  }
  for (const link of node.chain) {
    if (link.uid !== 0) problems.push(`${link.path} is owned by uid ${link.uid}, not root`);
    if (link.mode & 0o022) problems.push(`${link.path} is writable by group or others (mode ${(link.mode & 0o7777).toString(8)})`);
  }
  return problems;
}

/**
 * Why root must not install from a package directory: the directory (after symlinks) or any ancestor up
 * to / is owned by another account, or writable by group or others without the sticky bit (then they
 * could swap the files, manifest included, between our check and our copy: a user's npx cache, an nvm
 * prefix). A sticky world-writable ancestor (/tmp) is fine: others cannot rename what root owns in it.
 */
export function packageDirProblems(chain: { path: string; uid: number; mode: number }[]): string[] {
  const problems: string[] = [];
  for (const dir of chain) {
    if (dir.uid !== 0) problems.push(`the package directory ${chain[0]?.path}: ${dir.path} is owned by uid ${dir.uid}, not root; install the package as root (npm install -g) and run its opencode-ptyctl`);
    else if (dir.mode & 0o022 && !(dir.mode & 0o1000)) problems.push(`the package directory ${chain[0]?.path}: ${dir.path} is writable by group or others (mode ${(dir.mode & 0o7777).toString(8)})`);
  }
  return problems;
}

/** Notes about optional features this kernel lacks (never a refusal). */
export function hostNotes(facts: HostFacts): string[] {
  const kernel = parseVersion(facts.kernel);
  if (kernel && !atLeast(kernel, PEERPIDFD_KERNEL)) {
    return [`kernel ${facts.kernel} has no SO_PEERPIDFD (6.5): the broker identifies peers by pidfd_open(2) plus a start-time check`];
  }
  return [];
}
