// Proves a sandbox left the host as it found it: a snapshot before boot, compared after stop.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxError } from './errors.ts';
import { processesOfNamespace, type PidNamespaceIdentity } from './namespaces.ts';

/**
 * Every sandbox's temp dir starts with this. Test files may run at the same time on one host, and
 * each sandbox's own check covers its own dir, so other sandboxes' dirs are left out of the
 * listings; this sandbox's dir must be gone after stop (checked by exact path).
 */
export const SANDBOX_DIR_PREFIX = 'opencode-pty-sandbox-';
/** A file each sandbox leaves in the temp dir while it runs: if it is gone at the check, the temp dir was wiped. */
export const CANARY_PREFIX = 'opencode-pty-canary-';

const ACCOUNT_FILES = ['/etc/passwd', '/etc/group', '/etc/shadow', '/etc/gshadow'];

export interface HostSnapshot {
  tmp: string[];
  run: string[];
  mounts: number;
  hashes: Record<string, string>;
}

function listing(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => !name.startsWith(SANDBOX_DIR_PREFIX) && !name.startsWith(CANARY_PREFIX))
    .sort();
}

function sha256(path: string): string {
  return existsSync(path) ? createHash('sha256').update(readFileSync(path)).digest('hex') : 'absent';
}

export function snapshotHost(): HostSnapshot {
  return {
    tmp: listing(tmpdir()),
    run: listing('/run'),
    mounts: readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).length,
    hashes: Object.fromEntries(ACCOUNT_FILES.map((file) => [file, sha256(file)])),
  };
}

/** What systemd inside would leave in a /tmp it could reach (tmpfiles.d x11.conf, PrivateTmp=). */
const SYSTEMD_TMP_NAME = /^(systemd-private-|\.(X11|ICE|XIM|font|Test)-unix$)/;

export interface Comparison {
  /** Differences that fail the check. */
  differences: string[];
  /** New names in the temp dir from other work on a shared host: reported, not failed, unless strict. */
  warnings: string[];
}

/**
 * What differs between two snapshots (pure). /run, the mounts and the account files compare
 * exactly. So does the temp dir in `strict` mode (CI). Outside it, on a real machine, other
 * programs create and delete their own files there: a new name systemd would not create, or a name
 * that disappeared, is only a warning. A wipe (what systemd-tmpfiles did to the host's /tmp once)
 * is caught by the canary instead (`checkCanary`), which no other program has a reason to touch.
 */
export function compareSnapshots(before: HostSnapshot, after: HostSnapshot, strict: boolean): Comparison {
  const differences: string[] = [];
  const warnings: string[] = [];
  for (const [label, a, b] of [
    [tmpdir(), before.tmp, after.tmp],
    ['/run', before.run, after.run],
  ] as const) {
    const added = b.filter((name) => !a.includes(name));
    const removed = a.filter((name) => !b.includes(name));
    const lenient = !strict && label !== '/run';
    const failing = lenient ? added.filter((name) => SYSTEMD_TMP_NAME.test(name)) : added;
    const tolerated = added.filter((name) => !failing.includes(name));
    if (failing.length) differences.push(`${label}: appeared: ${failing.join(', ')}`);
    if (tolerated.length) warnings.push(`${label}: appeared (not from systemd; other work on this host?): ${tolerated.join(', ')}`);
    if (removed.length && lenient) warnings.push(`${label}: disappeared (deleted by their owners?): ${removed.join(', ')}`);
    else if (removed.length) differences.push(`${label}: disappeared: ${removed.join(', ')}`);
  }
  if (before.mounts !== after.mounts) differences.push(`host mount count changed: ${before.mounts} → ${after.mounts}`);
  for (const [file, hash] of Object.entries(before.hashes)) {
    if (after.hashes[file] !== hash) differences.push(`${file} changed (sha256 ${hash} → ${after.hashes[file]})`);
  }
  return { differences, warnings };
}

/** Places the canary; its path goes into the traces the check reads. */
export function placeCanary(): string {
  const path = join(tmpdir(), `${CANARY_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
  writeFileSync(path, 'opencode-pty test sandbox: this file disappearing means the temp dir was wiped\n', { flag: 'wx' });
  return path;
}

export interface SandboxTraces {
  /** The canary placed before boot: it must still be there (then it is removed). */
  canary?: string;
  /** The sandbox's pid namespace: no process may remain in it. */
  pidNamespace?: PidNamespaceIdentity;
  /** The sandbox's cgroup directory on the host: must be gone. */
  cgroup?: string;
  /** The sandbox's temp dir: must be gone. */
  stateDir?: string;
}

/** Throws SANDBOX_HOST_CHANGED listing every difference between the host now and `before`; strict by default in CI. */
export function checkHost(before: HostSnapshot, traces: SandboxTraces, strict = Boolean(process.env.CI)): void {
  const { differences, warnings } = compareSnapshots(before, snapshotHost(), strict);
  for (const warning of warnings) process.stderr.write(`sandbox host check: WARNING: ${warning}\n`);
  if (traces.canary) {
    if (existsSync(traces.canary)) rmSync(traces.canary, { force: true });
    else differences.push(`${tmpdir()} was wiped: the canary ${traces.canary} placed before boot is gone`);
  }
  if (traces.pidNamespace !== undefined) {
    const left = processesOfNamespace(traces.pidNamespace);
    if (left.length) differences.push(`processes of the sandbox's pid namespace still alive: ${left.join(', ')}`);
  }
  if (traces.cgroup && existsSync(traces.cgroup)) differences.push(`the sandbox's cgroup ${traces.cgroup} still exists`);
  if (traces.stateDir && existsSync(traces.stateDir)) differences.push(`the sandbox's temp dir ${traces.stateDir} still exists`);
  if (differences.length) {
    throw new SandboxError(
      'SANDBOX_HOST_CHANGED',
      `HOST CHECK FAILED: the host differs from before the sandbox booted:\n  - ${differences.join('\n  - ')}`,
    );
  }
}
