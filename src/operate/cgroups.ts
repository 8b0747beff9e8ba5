// Which cgroup layout the host runs (unified, hybrid or legacy), from facts a small probe reads, and
// what follows for the supervisor: a refusal on a legacy host, a warning where the sessions slice's
// limits have no controller to enforce them.
import { readFileSync, statfsSync } from 'node:fs';

/** statfs(2) f_type values (linux/magic.h). */
const CGROUP2_SUPER_MAGIC = 0x63677270;
const TMPFS_MAGIC = 0x01021994;

export const CGROUP_ROOT = '/sys/fs/cgroup';
/** Where systemd mounts the unified hierarchy beside the v1 controllers in its hybrid layout. */
export const CGROUP_HYBRID_UNIFIED = '/sys/fs/cgroup/unified';

export interface CgroupFacts {
  /** What is mounted at /sys/fs/cgroup: cgroup2 (unified), tmpfs (v1 hierarchies below it), or other/missing. */
  root: 'cgroup2' | 'tmpfs' | 'other' | 'missing';
  /** A cgroup2 file system at /sys/fs/cgroup/unified (systemd's hybrid layout). */
  hybridUnified: boolean;
  /** The controllers the unified hierarchy's root offers (its cgroup.controllers); empty without one. */
  controllers: string[];
}

export type CgroupLayout = 'unified' | 'hybrid' | 'legacy';

/** The layout as systemd tells them apart (cg_unified_cached() in its src/basic/cgroup-util.c): statfs of the two mount points. */
export function cgroupLayout(facts: CgroupFacts): CgroupLayout {
  if (facts.root === 'cgroup2') return 'unified';
  if (facts.root === 'tmpfs' && facts.hybridUnified) return 'hybrid';
  return 'legacy';
}

/** The sessions slice's limits and the unified-hierarchy controller each needs (systemd.resource-control(5)). */
export const SLICE_LIMIT_CONTROLLERS = { MemoryMax: 'memory', TasksMax: 'pids' } as const;

/**
 * Why the supervisor cannot run here, or undefined. The broker finds a peer's unit from the unified
 * hierarchy's "0::" line of /proc/PID/cgroup (src/identity, src/native's cgroupOf); a legacy host has
 * no such line (the kernel prints it only once cgroup2 is mounted, and systemd keeps no unit tree there),
 * so every client would be refused.
 */
export function cgroupProblem(facts: CgroupFacts): string | undefined {
  if (cgroupLayout(facts) !== 'legacy') return undefined;
  return (
    `this host has only cgroup v1 (no cgroup2 at ${CGROUP_ROOT} or ${CGROUP_HYBRID_UNIFIED}): the broker identifies a client's unit from the ` +
    'unified hierarchy ("0::" in /proc/PID/cgroup) and would refuse every client; boot with systemd.unified_cgroup_hierarchy=1 on the kernel command line'
  );
}

/** A warning when the sessions slice's limits are written but not enforced (the controllers are elsewhere), or undefined. */
export function cgroupLimitWarning(facts: CgroupFacts, slice: string): string | undefined {
  const layout = cgroupLayout(facts);
  if (layout === 'legacy') return undefined; // refused, not warned
  const missing = Object.entries(SLICE_LIMIT_CONTROLLERS).filter(([, controller]) => !facts.controllers.includes(controller));
  if (!missing.length) return undefined;
  const where = layout === 'hybrid' ? 'which this hybrid host keeps on cgroup v1' : 'which the unified hierarchy here does not offer (a container may withhold them)';
  return (
    `${slice}: ${missing.map(([limit, controller]) => `${limit}= (${controller})`).join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not enforced: ` +
    `systemd.resource-control(5) applies ${missing.length > 1 ? 'them' : 'it'} through the unified hierarchy's controllers, ${where}; ` +
    'boot with systemd.unified_cgroup_hierarchy=1 to enforce the limits on all sessions together'
  );
}

/** What the probe reads, so tests can show every layout without changing the machine. */
export interface CgroupReader {
  /** statfs(2)'s f_type of a path, or undefined when there is nothing there. */
  fsType(path: string): number | undefined;
  readFile(path: string): string | undefined;
}

export const hostCgroupReader: CgroupReader = {
  fsType: (path) => {
    try {
      return statfsSync(path).type;
    } catch {
      return undefined;
    }
  },
  readFile: (path) => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  },
};

export function probeCgroups(reader: CgroupReader = hostCgroupReader): CgroupFacts {
  const type = reader.fsType(CGROUP_ROOT);
  const root = type === undefined ? 'missing' : type === CGROUP2_SUPER_MAGIC ? 'cgroup2' : type === TMPFS_MAGIC ? 'tmpfs' : 'other';
  const hybridUnified = root === 'tmpfs' && reader.fsType(CGROUP_HYBRID_UNIFIED) === CGROUP2_SUPER_MAGIC;
  const unifiedDir = root === 'cgroup2' ? CGROUP_ROOT : hybridUnified ? CGROUP_HYBRID_UNIFIED : undefined;
  const controllers = unifiedDir ? (reader.readFile(`${unifiedDir}/cgroup.controllers`) ?? '').split(/\s+/).filter(Boolean) : [];
  return { root, hybridUnified, controllers };
}

export const FS_MAGIC = { CGROUP2_SUPER_MAGIC, TMPFS_MAGIC } as const;
