// The sandbox's cgroup on the host: found from mountinfo, created fresh, removed depth-first afterwards.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** The mount point of the first cgroup2 file system in a mountinfo text (proc_pid_mountinfo(5)), or undefined. */
export function cgroup2Mount(mountinfo: string): string | undefined {
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    if (after.split(' ')[0] === 'cgroup2') return unescapeMountPath(before.split(' ')[4]!);
  }
  return undefined;
}

// mountinfo escapes space, tab, newline and backslash as octal.
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

export function hostCgroup2Mount(): string | undefined {
  return cgroup2Mount(readFileSync('/proc/self/mountinfo', 'utf8'));
}

/** Creates an empty cgroup directly below the cgroup2 root; the sandbox's systemd owns all of it. */
export function createCgroup(mount: string, name: string): string {
  const path = join(mount, name);
  mkdirSync(path);
  return path;
}

function removeTree(path: string): void {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    // A cgroup's children are its only directories; its files vanish with it.
    if (entry.isDirectory()) removeTree(join(path, entry.name));
  }
  rmdirSync(path);
}

/**
 * Removes a cgroup and everything systemd created below it. A cgroup stays busy until its last
 * task is released, a moment after the pid namespace is torn down, so EBUSY is retried until the
 * deadline; the rmdir decides, not the clock.
 */
export async function removeCgroup(path: string, deadlineMs = 5000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (let pause = 2; ; pause = Math.min(pause * 2, 100)) {
    if (!existsSync(path)) return;
    try {
      removeTree(path);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      if (code !== 'EBUSY' || Date.now() > deadline) throw error;
    }
    await delay(pause);
  }
}

/** Process IDs (host view) still in a cgroup or any cgroup below it. */
export function cgroupProcesses(path: string): number[] {
  if (!existsSync(path)) return [];
  const pids: number[] = [];
  const walk = (dir: string) => {
    try {
      for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (line) pids.push(Number(line));
      for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name));
    } catch {
      // Removed while walking.
    }
  };
  walk(path);
  return pids;
}
