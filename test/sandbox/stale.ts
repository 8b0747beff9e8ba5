// Leftovers of sandboxes whose test process was killed (the death signals take the processes, not
// the temp dir or the cgroup): each sandbox records its owner, and the next boot sweeps the dead ones.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupProcesses, hostCgroup2Mount, removeCgroup } from './cgroup.ts';
import { CANARY_PREFIX, SANDBOX_DIR_PREFIX } from './host-check.ts';
import { isZombie, startTime } from './namespaces.ts';

const OWNER_FILE = 'owner';
/** A temp dir gets its owner file right after mkdtemp; give a concurrent boot that long. */
const UNOWNED_GRACE_MS = 60_000;
/** A cgroup named without its owner (by an older boot) is judged by its age alone: an empty one this
 * old is past any boot's moment between creating it and moving its first process in. */
export const UNRECORDED_CGROUP_GRACE_MS = 10 * 60_000;

/** One process for good: its PID and start time (the kernel reuses PIDs). */
export interface Owner {
  pid: number;
  start: string;
}

/** A sandbox's name (its temp dir's, and its cgroup's): the prefix, its owner, then mkdtemp's six characters. */
const OWNED_NAME = new RegExp(`^${SANDBOX_DIR_PREFIX}(\\d+)-(\\d+)-[A-Za-z0-9]{6}$`);

/** The owner a sandbox's name records, or undefined for a name an older boot gave. */
export function ownerInName(name: string): Owner | undefined {
  const match = OWNED_NAME.exec(name);
  return match ? { pid: Number(match[1]), start: match[2]! } : undefined;
}

/** The start of a sandbox's name owned by `owner` (mkdtemp adds the rest). */
export function namePrefix(owner: Owner): string {
  return `${SANDBOX_DIR_PREFIX}${owner.pid}-${owner.start}-`;
}

/**
 * A fresh temp dir for a sandbox of this process, its cgroup to be named after it. The cgroup sits
 * below the host's one cgroup2 mount, where runs with other temp dirs see it and cannot read its
 * owner file: the name records the owner, so they can tell a leftover from one about to boot.
 */
export function createStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), namePrefix({ pid: process.pid, start: startTime(process.pid)! })));
  // The sweeps of this temp dir read the owner file (older ones know no other record).
  writeOwner(dir);
  return dir;
}

function writeOwner(stateDir: string): void {
  writeFileSync(join(stateDir, OWNER_FILE), `${process.pid} ${startTime(process.pid)}\n`);
}

function alive(owner: Owner): boolean {
  // A dead owner may linger as a zombie when its parent does not reap it.
  return startTime(owner.pid) === owner.start && !isZombie(owner.pid);
}

function ownerAlive(stateDir: string): boolean {
  try {
    const [pid, start] = readFileSync(join(stateDir, OWNER_FILE), 'utf8').trim().split(' ');
    return alive({ pid: Number(pid), start: start! });
  } catch {
    return Date.now() - statSync(stateDir).mtimeMs < UNOWNED_GRACE_MS;
  }
}

/** What a sandbox cgroup whose temp dir is not in our temp dir shows of itself. */
export interface CgroupFacts {
  /** From its name: 'unrecorded' when an older boot named it. */
  owner: 'alive' | 'dead' | 'unrecorded';
  /** Processes in it or below it. */
  processes: number;
  /** Since the kernel made its inode (never before the cgroup itself was made). */
  ageMs: number;
}

/**
 * Whether such a cgroup is provably a leftover. Its temp dir may be in a temp dir of another run,
 * so that the dir is not ours to see proves nothing: an empty cgroup may be one a boot has just made
 * and not yet moved its first process into. Only a dead owner proves it; without an owner, an age
 * no boot takes to get there.
 */
export function isLeftoverCgroup(facts: CgroupFacts): boolean {
  if (facts.processes > 0 || facts.owner === 'alive') return false;
  return facts.owner === 'dead' || facts.ageMs > UNRECORDED_CGROUP_GRACE_MS;
}

function cgroupFacts(name: string, cgroup: string): CgroupFacts | undefined {
  const owner = ownerInName(name);
  try {
    const ageMs = Date.now() - statSync(cgroup).ctimeMs;
    return { owner: owner ? (alive(owner) ? 'alive' : 'dead') : 'unrecorded', processes: cgroupProcesses(cgroup).length, ageMs };
  } catch {
    // Removed meanwhile, by its owner or another sweep.
    return undefined;
  }
}

function mountedBelow(dir: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => {
      const point = line.split(' ')[4];
      return point === dir || point?.startsWith(`${dir}/`) === true;
    });
}

/** Removes temp dirs and cgroups of sandboxes whose owner is gone and whose processes are all gone. Returns what it removed. */
export async function sweepStale(): Promise<string[]> {
  const removed: string[] = [];
  const mount = hostCgroup2Mount();
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(SANDBOX_DIR_PREFIX))) {
    const dir = join(tmpdir(), name);
    const cgroup = mount && join(mount, name);
    if (ownerAlive(dir) || mountedBelow(dir)) continue;
    if (cgroup && cgroupProcesses(cgroup).length) continue;
    if (cgroup && existsSync(cgroup)) {
      await removeCgroup(cgroup);
      removed.push(cgroup);
    }
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  // Canaries are named by their owner's PID; a dead owner's canary is a leftover too.
  for (const name of readdirSync(tmpdir()).filter((n) => n.startsWith(CANARY_PREFIX))) {
    const pid = Number(name.slice(CANARY_PREFIX.length).split('-')[0]);
    if (Number.isInteger(pid) && pid > 0 && (startTime(pid) === undefined || isZombie(pid))) {
      rmSync(join(tmpdir(), name), { force: true });
      removed.push(join(tmpdir(), name));
    }
  }
  // The rest are cgroups whose temp dir is elsewhere: gone with a killed run, or another run's.
  if (mount) {
    for (const name of readdirSync(mount).filter((n) => n.startsWith(SANDBOX_DIR_PREFIX))) {
      const cgroup = join(mount, name);
      if (existsSync(join(tmpdir(), name))) continue;
      const facts = cgroupFacts(name, cgroup);
      if (!facts || !isLeftoverCgroup(facts)) continue;
      await removeCgroup(cgroup);
      removed.push(cgroup);
    }
  }
  return removed;
}
