// A live session's profile, network and budgets as status shows them, from its unit's own properties
// (pure): what systemd holds for the unit, not what was asked (src/worker/start-plan.ts sets them).

export interface SessionLimits {
  /** From the unit's Description: "(NAME)" after the program for any profile but the default. */
  profile: string;
  network: 'off' | 'host-loopback' | 'on';
  /** systemctl's own text ("10min", "1G", "50%"…), null where the unit has none. */
  wallClock: string | null;
  memoryMax: string | null;
  tasksMax: string | null;
  cpuQuota: string | null;
}

/** The properties sessionLimits reads (systemctl show). */
export const LIMIT_PROPERTIES = ['Description', 'PrivateNetwork', 'IPAddressDeny', 'RuntimeMaxUSec', 'MemoryMax', 'TasksMax', 'CPUQuotaPerSecUSec'];

function set(value: string | undefined): string | null {
  return value === undefined || value === '' || value === 'infinity' ? null : value;
}

export function sessionLimits(props: Readonly<Record<string, string>>): SessionLimits {
  const profile = /\(([a-z][a-z0-9-]*)\)$/.exec(props.Description ?? '')?.[1] ?? 'default';
  const network = props.PrivateNetwork === 'yes' ? 'off' : set(props.IPAddressDeny) ? 'host-loopback' : 'on';
  return {
    profile,
    network,
    wallClock: set(props.RuntimeMaxUSec),
    memoryMax: set(props.MemoryMax),
    tasksMax: set(props.TasksMax),
    cpuQuota: set(props.CPUQuotaPerSecUSec),
  };
}

/** One line of status's text (the caller passes it through printable()). */
export function limitsText(limits: SessionLimits): string {
  const budget = (name: string, value: string | null) => `${name} ${value ?? 'none'}`;
  return `profile ${limits.profile}, network ${limits.network}, ${budget('time', limits.wallClock)}, ${budget('memory', limits.memoryMax)}, ${budget('tasks', limits.tasksMax)}, ${budget('cpu', limits.cpuQuota)}`;
}
