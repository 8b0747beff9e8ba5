// A session's network and budgets as unit properties (pure), each through the operator allowlist's own
// converters (unit-limits.ts), so a value from a client meets the same checks as one from the config.
// systemd.exec(5) "PrivateNetwork=", systemd.resource-control(5) "IPAddressAllow=", "MemoryMax=",
// "TasksMax=", "CPUQuota=", systemd.service(5) "RuntimeMaxSec=", "OOMPolicy=".
import { SystemdError } from './errors.ts';
import { limitProperties, type PropertyTuple } from './unit-limits.ts';

/** Ordered from least to most: the session's own loopback only, the host's loopback only, the host's network. */
export type SessionNetwork = 'off' | 'host-loopback' | 'on';

/** What the unit's cgroup enforces (the wall clock is apart: SessionUnitSpec.wallClockMs). */
export interface SessionBudgets {
  memoryBytes?: number;
  tasks?: number;
  cpuPercent?: number;
}

const AF_INET = 2;
const AF_INET6 = 10;
/** IPAddressAllow=localhost and IPAddressDeny=any as D-Bus takes them, a(iayu): family, address, prefix. */
const LOCALHOST: Array<[number, Buffer, number]> = [
  [AF_INET, Buffer.from([127, 0, 0, 0]), 8],
  [AF_INET6, Buffer.from([...new Array(15).fill(0), 1]), 128],
];
const ANY: Array<[number, Buffer, number]> = [
  [AF_INET, Buffer.alloc(4), 0],
  [AF_INET6, Buffer.alloc(16), 0],
];

/**
 * `off`: a network namespace of its own (PrivateNetwork=), whose loopback is the session's alone.
 * `host-loopback`: the host's loopback and nothing else, by systemd's BPF firewall on the unit's cgroup;
 * it reaches every service listening there, the agent's own HTTP API included (docs/security.md).
 */
export function networkProperties(network: SessionNetwork | undefined): PropertyTuple[] {
  switch (network) {
    case undefined:
    case 'on':
      return [];
    case 'off':
      return limitProperties({ PrivateNetwork: true });
    case 'host-loopback':
      return [
        ['IPAddressDeny', 'a(iayu)', ANY],
        ['IPAddressAllow', 'a(iayu)', LOCALHOST],
        // systemd counts the unit's traffic with the same BPF programs it filters with: a count, where a
        // manager without them shows none, is what confirms the filter on the started unit (guarantees.ts).
        ['IPAccounting', 'b', true],
      ];
    default:
      throw new SystemdError('PROPERTY_INVALID', `network ${JSON.stringify(network)} is not off, host-loopback or on`);
  }
}

/** The OOM score the program gets under a memory budget (the helper keeps its own): the first choice. */
export const PROGRAM_OOM_SCORE_ADJ = 1000;

/** The cgroup's budgets; under a memory budget, OOMPolicy=continue so an OOM kill of the program leaves
 * the helper running to report it (the program's raised score: the helper's --program-oom-score-adj). */
export function budgetProperties(budgets: SessionBudgets | undefined): PropertyTuple[] {
  const { memoryBytes, tasks, cpuPercent } = budgets ?? {};
  const tuples = limitProperties({
    ...(memoryBytes === undefined ? {} : { MemoryMax: memoryBytes }),
    ...(tasks === undefined ? {} : { TasksMax: tasks }),
    ...(cpuPercent === undefined ? {} : { CPUQuota: cpuPercent }),
  });
  if (memoryBytes !== undefined) tuples.push(['OOMPolicy', 's', 'continue']);
  return tuples;
}

/** The wall clock as RuntimeMaxSec= (systemd stops the unit past it; EXIT's result is `timeout`). */
export function wallClockProperties(wallClockMs: number | undefined): PropertyTuple[] {
  if (wallClockMs === undefined) return [];
  if (!Number.isSafeInteger(wallClockMs) || wallClockMs < 1) throw new SystemdError('PROPERTY_INVALID', `wall clock ${wallClockMs} ms is not a positive integer`);
  return limitProperties({ RuntimeMaxSec: wallClockMs / 1000 });
}

/**
 * The session's own properties, then the operator's of the same names only where they are stricter: a
 * lower uint64 budget, PrivateNetwork=yes. A client's request can narrow the operator's settings, never
 * widen them (and the operator's, coming after, would otherwise widen the request).
 */
export function stricterOf(session: readonly PropertyTuple[], operator: readonly PropertyTuple[]): { session: PropertyTuple[]; operator: PropertyTuple[] } {
  const theirs = new Map(operator.map((tuple) => [tuple[0], tuple]));
  const merged = session.map((tuple): PropertyTuple => {
    const other = theirs.get(tuple[0]);
    if (!other || other[1] !== tuple[1]) return tuple;
    if (tuple[1] === 't' && (other[2] as bigint) < (tuple[2] as bigint)) return other;
    if (tuple[1] === 'b') return [tuple[0], 'b', (tuple[2] as boolean) || (other[2] as boolean)];
    return tuple;
  });
  const names = new Set(session.map(([name]) => name));
  return { session: merged, operator: operator.filter(([name]) => !names.has(name)) };
}
