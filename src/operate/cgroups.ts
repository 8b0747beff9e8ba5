// Which cgroup layout the host runs (unified, hybrid or legacy) and where each controller the sessions'
// limits need lives, from facts a small probe reads; a legacy host is refused here (what the limits
// become on the others: cgroup-limits.ts).
import { readFileSync, statfsSync } from 'node:fs';

/** statfs(2) f_type values (linux/magic.h). */
const CGROUP2_SUPER_MAGIC = 0x63677270;
const TMPFS_MAGIC = 0x01021994;
/** A cgroup v1 hierarchy. */
const CGROUP_SUPER_MAGIC = 0x27e0eb;

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
  /** Which of LIMIT_CONTROLLERS have a cgroup v1 hierarchy mounted at /sys/fs/cgroup/<controller>. */
  v1Controllers: string[];
}

/** The controllers the sessions' limits need: memory (MemoryMax= and the like) and pids (TasksMax=). */
export const LIMIT_CONTROLLERS = ['memory', 'pids'] as const;
export type LimitController = (typeof LIMIT_CONTROLLERS)[number];

export type CgroupLayout = 'unified' | 'hybrid' | 'legacy';

/** The layout as systemd tells them apart (cg_unified_cached() in its src/basic/cgroup-util.c): statfs of the two mount points. */
export function cgroupLayout(facts: CgroupFacts): CgroupLayout {
  if (facts.root === 'cgroup2') return 'unified';
  if (facts.root === 'tmpfs' && facts.hybridUnified) return 'hybrid';
  return 'legacy';
}

/** Where systemd drives a controller: through the unified hierarchy, a v1 hierarchy, or nowhere (its settings are not enforced). */
export type ControllerHome = 'unified' | 'v1' | 'none';

/**
 * systemd 252 drives every controller through the unified hierarchy when /sys/fs/cgroup is cgroup2, and
 * through the v1 hierarchies otherwise: in the hybrid layout the unified tree serves only its own process
 * tracking (cg_unified_controller() in src/basic/cgroup-util.c), whatever its cgroup.controllers offers.
 */
export function controllerHome(facts: CgroupFacts, controller: LimitController): ControllerHome {
  if (cgroupLayout(facts) === 'unified') return facts.controllers.includes(controller) ? 'unified' : 'none';
  return facts.v1Controllers.includes(controller) ? 'v1' : 'none';
}

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
  // The path systemd uses for a v1 controller (its controller_is_v1_accessible()); statfs follows a co-mount's symlink.
  const v1Controllers = root === 'tmpfs' ? LIMIT_CONTROLLERS.filter((controller) => reader.fsType(`${CGROUP_ROOT}/${controller}`) === CGROUP_SUPER_MAGIC) : [];
  return { root, hybridUnified, controllers, v1Controllers };
}

export const FS_MAGIC = { CGROUP2_SUPER_MAGIC, TMPFS_MAGIC, CGROUP_SUPER_MAGIC } as const;
