// What the probes read of a process in /proc and /sys/fs/cgroup (bench/probe.ts, bench/probe-attach.ts).
import { readFileSync } from 'node:fs';

/** PSS, RSS and USS (private clean + dirty) in kB from smaps_rollup, or undefined once the process is gone. */
export function memory(pid: number): { pss: number; rss: number; uss: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
    return { pss: field('Pss'), rss: field('Rss'), uss: field('Private_Clean') + field('Private_Dirty') };
  } catch {
    return undefined;
  }
}

/** The process's start time in clock ticks since boot (proc(5) stat field 22): orders processes by age. */
export function startTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
}

/** The process's cgroup v2 path, as /proc/PID/cgroup names it. */
export function cgroupOf(pid: number): string {
  return readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n').find((line) => line.startsWith('0::'))!.slice(3);
}
