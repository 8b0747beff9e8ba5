// Leftovers of sandboxes whose test process was killed (the death signals take the processes, not
// the temp dir or the cgroup): each sandbox records its owner, and the next boot sweeps the dead ones.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupProcesses, hostCgroup2Mount, removeCgroup } from './cgroup.ts';
import { CANARY_PREFIX, SANDBOX_DIR_PREFIX } from './host-check.ts';
import { isZombie, startTime } from './namespaces.ts';

const OWNER_FILE = 'owner';
/** A temp dir gets its owner file right after mkdtemp; give a concurrent boot that long. */
const UNOWNED_GRACE_MS = 60_000;

export function writeOwner(stateDir: string): void {
  writeFileSync(join(stateDir, OWNER_FILE), `${process.pid} ${startTime(process.pid)}\n`);
}

function ownerAlive(stateDir: string): boolean {
  try {
    const [pid, start] = readFileSync(join(stateDir, OWNER_FILE), 'utf8').trim().split(' ');
    // A dead owner may linger as a zombie when its parent does not reap it.
    return startTime(Number(pid)) === start && !isZombie(Number(pid));
  } catch {
    return Date.now() - statSync(stateDir).mtimeMs < UNOWNED_GRACE_MS;
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
  // A cgroup outlives its temp dir only when its test process died in between.
  if (mount) {
    for (const name of readdirSync(mount).filter((n) => n.startsWith(SANDBOX_DIR_PREFIX))) {
      const cgroup = join(mount, name);
      if (existsSync(join(tmpdir(), name)) || cgroupProcesses(cgroup).length) continue;
      await removeCgroup(cgroup);
      removed.push(cgroup);
    }
  }
  return removed;
}
