// Session-end accounting: the unit's figures as systemd reports them (as `systemd-run` prints them
// after a unit ends), logged to the journal with the session's fields: root's record never takes the
// session helper's word (its FIGURES go to its client's end record only). A figure systemd cannot give
// (no controller, accounting off, gone with the cgroup) is left out, never logged as zero.
import { createLogger, sessionFields, wireCodeName, type LogFields, type Logger } from '../log.ts';
import type { UnitManager, ExitStatus } from '../systemd/index.ts';


/** Service-interface figures of systemd 252 (org.freedesktop.systemd1(5)); MemoryPeak needs 255. */
const FIGURES = {
  CPUUsageNSec: 'CPU_USAGE_NSEC',
  MemoryCurrent: 'MEMORY_CURRENT_BYTES',
  MemoryPeak: 'MEMORY_PEAK_BYTES',
  IOReadBytes: 'IO_READ_BYTES',
  IOWriteBytes: 'IO_WRITE_BYTES',
  TasksCurrent: 'TASKS_CURRENT',
} as const;

const UINT64_MAX = 2n ** 64n - 1n;

export type SessionFigures = Partial<Record<(typeof FIGURES)[keyof typeof FIGURES], bigint>>;

function asBigint(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^\d+$/.test(value)) return BigInt(value);
  return undefined;
}

/** Pure: systemd's properties to figures; UINT64_MAX ("unavailable" on the bus) and unset both drop out. */
export function figuresFrom(properties: Record<string, unknown> | undefined): SessionFigures {
  const figures: SessionFigures = {};
  if (!properties) return figures;
  for (const [property, field] of Object.entries(FIGURES)) {
    const value = asBigint(properties[property]);
    if (value !== undefined && value !== UINT64_MAX) figures[field] = value;
  }
  return figures;
}

/** Reads systemd's figures now (before the unit is stopped, so MemoryCurrent still exists); never
 * rejects. A manager without unitProperties (a test's fake) gives no figures. */
export function readSessionFigures(manager: object, unit: string | undefined): Promise<SessionFigures> {
  const { unitProperties } = manager as Partial<Pick<UnitManager, 'unitProperties'>>;
  if (!unit || !unitProperties) return Promise.resolve({});
  return unitProperties
    .call(manager, unit, { service: Object.keys(FIGURES) })
    .then(figuresFrom, () => ({}));
}

export interface SessionEnd {
  unit: string | undefined;
  peer: { pid: number; uid: number };
  reason: string;
  exit?: ExitStatus;
  error?: { wireCode?: unknown; message: string };
  /** INPUT and OUTPUT payload bytes, as the session helper counted them (its end report); absent without one. */
  bytesIn?: bigint;
  bytesOut?: bigint;
  /** The program as the unit's description names it (start-plan.ts), once a unit was asked for. */
  program?: string;
  /** From the program's start (its pid known) to the unit's end; absent when it never started. */
  durationMs?: bigint;
}

/** Pure: the journal fields of one session's end. */
export function sessionEndFields(end: SessionEnd, figures: SessionFigures): LogFields {
  return {
    ...sessionFields(end.unit),
    OPENCODE_PTY_EVENT: 'session-end',
    PEER_PID: end.peer.pid,
    PEER_UID: end.peer.uid,
    PROGRAM: end.program,
    RESULT: end.exit?.result ?? end.reason,
    EXIT_CODE: end.exit?.code,
    EXIT_STATUS: end.exit?.status,
    ERROR_CODE: end.error ? wireCodeName(end.error.wireCode) : undefined,
    DURATION_MS: end.durationMs,
    BYTES_IN: end.bytesIn,
    BYTES_OUT: end.bytesOut,
    ...figures,
  };
}

let logger: Logger | undefined;

/** Logs one session's end with its figures (the hook in the session's end). */
export async function logSessionEnd(end: SessionEnd, figures: Promise<SessionFigures>, log: Logger = (logger ??= createLogger(`worker[${process.pid}]`))): Promise<void> {
  if (!end.unit) return;
  const fields = sessionEndFields(end, await figures);
  const shown = ['CPU_USAGE_NSEC', 'MEMORY_CURRENT_BYTES', 'TASKS_CURRENT', 'IO_READ_BYTES', 'IO_WRITE_BYTES', 'BYTES_IN', 'BYTES_OUT']
    .map((name) => `${name.toLowerCase()}=${fields[name] ?? 'unavailable'}`)
    .join(' ');
  log('info', `session ${end.unit} accounting: ${end.reason}, ${shown}`, fields);
}
