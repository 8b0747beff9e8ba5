// What the sessions' resource limits become on the host's cgroup layout, as systemd 252 applies them
// (cgroup_context_apply() in its src/core/cgroup.c): through the unified hierarchy (nothing to say);
// through cgroup v1 on a hybrid host (a note: MemoryMax= is written as memory.limit_in_bytes, TasksMax=
// as pids.max, and the memory settings cgroup v2 alone has do nothing); or not at all where a controller
// is in neither hierarchy (a warning naming it).
import { CGROUP_ROOT, cgroupLayout, controllerHome, LIMIT_CONTROLLERS, type CgroupFacts, type LimitController } from './cgroups.ts';

/** The sessions slice's limits (unit-files.ts) and the controller each needs (systemd.resource-control(5)). */
export const SLICE_LIMIT_CONTROLLERS = { MemoryMax: 'memory', TasksMax: 'pids' } as const satisfies Record<string, LimitController>;

/** The file each slice limit becomes on cgroup v1 (cgroup_context_apply()'s non-unified branches). */
const V1_FILES: Record<keyof typeof SLICE_LIMIT_CONTROLLERS, string> = { MemoryMax: 'memory.limit_in_bytes', TasksMax: 'pids.max' };

/** The limits session.properties may set (src/systemd/unit-limits.ts) and the controller each needs. */
const PROPERTY_CONTROLLERS: Readonly<Record<string, LimitController>> = { MemoryMax: 'memory', MemoryHigh: 'memory', MemorySwapMax: 'memory', TasksMax: 'pids' };

/** Memory settings systemd writes on the unified hierarchy only (memory.min, .low, .high, .swap.max); on v1 it writes memory.limit_in_bytes alone. */
export const V2_ONLY_MEMORY_SETTINGS = ['MemoryMin', 'MemoryLow', 'MemoryHigh', 'MemorySwapMax'] as const;

export interface LimitReport {
  /** The limits hold, through cgroup v1: how, and what does nothing there. */
  note?: string;
  /** A limit is not enforced at all: its controller is in neither hierarchy. */
  warning?: string;
}

const list = (items: readonly string[]): string => (items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : (items[0] ?? ''));

/**
 * What install and verify say about the sessions' limits: `slice` is the sessions slice, `properties`
 * the names session.properties sets (each session's unit gets them). A legacy host is refused, not reported.
 */
export function sessionLimitReport(facts: CgroupFacts, slice: string, properties: readonly string[]): LimitReport {
  const layout = cgroupLayout(facts);
  if (layout === 'legacy') return {};
  const home = Object.fromEntries(LIMIT_CONTROLLERS.map((controller) => [controller, controllerHome(facts, controller)])) as Record<LimitController, ReturnType<typeof controllerHome>>;
  const limits = Object.entries(SLICE_LIMIT_CONTROLLERS) as [keyof typeof SLICE_LIMIT_CONTROLLERS, LimitController][];
  const report: LimitReport = {};

  const missing = LIMIT_CONTROLLERS.filter((controller) => home[controller] === 'none');
  if (missing.length) {
    const unenforced = limits.filter(([, controller]) => missing.includes(controller));
    const fromProperties = properties.filter((name) => Object.hasOwn(PROPERTY_CONTROLLERS, name) && missing.includes(PROPERTY_CONTROLLERS[name]!));
    const why =
      layout === 'unified'
        ? `the unified hierarchy here does not offer the ${list(missing)} controller${missing.length > 1 ? 's' : ''} (its cgroup.controllers)`
        : `this hybrid host mounts no cgroup v1 hierarchy at ${list(missing.map((c) => `${CGROUP_ROOT}/${c}`))}, and systemd in the hybrid layout uses the unified tree for its process tracking only`;
    report.warning =
      `${slice}: ${list(unenforced.map(([limit, controller]) => `${limit}= (${controller})`))} ${unenforced.length > 1 ? 'are' : 'is'} not enforced` +
      (fromProperties.length ? `, nor session.properties' ${list(fromProperties)}` : '') +
      `: ${why}; a container's manager, or cgroup_disable= on the kernel command line, may withhold ${missing.length > 1 ? 'them' : 'it'}`;
  }

  const onV1 = limits.filter(([, controller]) => home[controller] === 'v1');
  if (onV1.length) {
    let note =
      `${slice}: ${list(onV1.map(([limit]) => `${limit}=`))} ${onV1.length > 1 ? 'are' : 'is'} enforced through cgroup v1 on this hybrid host ` +
      `(${onV1.map(([limit]) => `${limit}= as ${V1_FILES[limit]}`).join(', ')})`;
    if (home.memory === 'v1') {
      const ignored = properties.filter((name) => (V2_ONLY_MEMORY_SETTINGS as readonly string[]).includes(name));
      note +=
        `; the memory settings of cgroup v2 alone (${V2_ONLY_MEMORY_SETTINGS.map((name) => `${name}=`).join(', ')}) have no effect here` +
        (ignored.length ? `, so session.properties' ${list(ignored)} ${ignored.length > 1 ? 'do' : 'does'} nothing` : '') +
        '; they take effect with systemd.unified_cgroup_hierarchy=1 on the kernel command line';
    }
    report.note = note;
  }
  return report;
}

/** The names a config's session.properties sets, from its text; none when it cannot be read (verify names a bad config). */
export function configuredPropertyNames(text: string | undefined): string[] {
  try {
    const properties = (JSON.parse(text ?? '') as { session?: { properties?: unknown } } | null)?.session?.properties;
    return typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? Object.keys(properties) : [];
  } catch {
    return [];
  }
}
