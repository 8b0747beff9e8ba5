// Namespace identity from /proc: inode numbers of a process's namespaces, and who lives in one.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export type NamespaceType = 'mnt' | 'pid' | 'net' | 'uts' | 'ipc' | 'cgroup' | 'user';

/** Parses a namespace link such as `pid:[4026531836]` (namespaces(7)). */
export function parseNamespaceLink(link: string): number | undefined {
  const match = /^[a-z_]+:\[(\d+)\]$/.exec(link);
  return match ? Number(match[1]) : undefined;
}

/** The inode of a process's namespace, or undefined once the process is gone. */
export function namespaceInode(pid: number | 'self', type: NamespaceType): number | undefined {
  try {
    return parseNamespaceLink(readlinkSync(`/proc/${pid}/ns/${type}`));
  } catch {
    return undefined;
  }
}

/** Host PIDs of every process whose pid namespace is the given one. */
export function processesInPidNamespace(inode: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if (namespaceInode(Number(entry), 'pid') === inode) pids.push(Number(entry));
  }
  return pids;
}

/** Direct children of a single-threaded process (proc_pid_task_children(5)). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter((field) => field.trim().length > 0)
      .map(Number);
  } catch {
    return [];
  }
}

/** The PID a host process has inside its innermost pid namespace (the last NSpid field of /proc/PID/status). */
export function innermostPid(pid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('NSpid:'));
    const fields = line?.split(/\s+/).slice(1).filter(Boolean);
    return fields?.length ? Number(fields[fields.length - 1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The host PID of the process that is `nsPid` inside the pid namespace `inode`, if it is alive. */
export function hostPidOf(inode: number, nsPid: number): number | undefined {
  return processesInPidNamespace(inode).find((pid) => innermostPid(pid) === nsPid);
}

/** Field 22 of /proc/PID/stat (start time): with the PID, it names one process for good (proc_pid_stat(5)). */
export function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after it follow the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Whether a process has exited but is not yet reaped (state Z in /proc/PID/stat). */
export function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/**
 * A sandbox's pid namespace, named so it survives reuse: the kernel hands a freed namespace's
 * inode number to the next new namespace (another sandbox booting), and PIDs are reused too.
 */
export interface PidNamespaceIdentity {
  pid1: number;
  pid1Start: string;
  pidNamespace: number;
}

/** Whether the recorded PID 1 still is that process, in that namespace. */
export function pid1Alive(id: PidNamespaceIdentity): boolean {
  return namespaceInode(id.pid1, 'pid') === id.pidNamespace && startTime(id.pid1) === id.pid1Start;
}

/**
 * Host PIDs of the processes still in the identified namespace. Processes under the same inode
 * number whose init (PID 1 inside) is another process are another namespace that reused it.
 */
export function processesOfNamespace(id: PidNamespaceIdentity): number[] {
  const pids = processesInPidNamespace(id.pidNamespace);
  const init = pids.find((pid) => innermostPid(pid) === 1);
  if (init !== undefined && (init !== id.pid1 || startTime(init) !== id.pid1Start)) return [];
  return pids;
}
