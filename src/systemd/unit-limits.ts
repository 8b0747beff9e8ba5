// The allowlist of resource-limit and sandbox properties an operator may set on session units,
// each with its D-Bus signature and value check (pure). Everything else is refused by name.
import { SystemdError } from './errors.ts';

/** One property of StartTransientUnit's `a(sv)`, before it becomes a dbus-next Variant. */
export type PropertyValue =
  | string
  | number
  | bigint
  | boolean
  | string[]
  | [allowList: boolean, names: string[]]
  | Array<[device: string, access: string]>
  | Array<[path: string, argv: string[], flags: string[]]>
  | Array<[path: string, argv: string[], ignoreFailure: boolean]>
  | Array<[family: number, address: Buffer, prefixLength: number]>
  | Array<[source: string, destination: string, ignoreMissing: boolean, flags: bigint]>;
export type PropertyTuple = readonly [name: string, signature: string, value: PropertyValue];

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;
const BYTE_SUFFIX: Record<string, bigint> = { '': 1n, K: 1n << 10n, M: 1n << 20n, G: 1n << 30n, T: 1n << 40n };

function invalid(name: string, value: unknown, expected: string): SystemdError {
  return new SystemdError('PROPERTY_INVALID', `${name}=${String(value)}: expected ${expected}`);
}

function bool(name: string): Converter {
  return (value) => {
    if (typeof value !== 'boolean') throw invalid(name, value, 'a boolean');
    return [name, 'b', value];
  };
}

/** A uint64 count or size: a non-negative integer, "infinity", or (for sizes) "512M"-style. */
function uint64(name: string, options: { suffixes?: boolean } = {}): Converter {
  return (value) => {
    if (value === 'infinity') return [name, 't', UINT64_MAX];
    let parsed: bigint | undefined;
    if (typeof value === 'bigint') parsed = value;
    else if (typeof value === 'number' && Number.isSafeInteger(value)) parsed = BigInt(value);
    else if (typeof value === 'string' && options.suffixes) {
      const match = /^([0-9]{1,15})([KMGT]?)$/.exec(value);
      if (match) parsed = BigInt(match[1]!) * BYTE_SUFFIX[match[2]!]!;
    }
    if (parsed === undefined || parsed < 0n || parsed > UINT64_MAX) {
      throw invalid(name, value, options.suffixes ? 'bytes (integer, K/M/G/T suffix, or "infinity")' : 'a non-negative integer or "infinity"');
    }
    return [name, 't', parsed];
  };
}

/** Seconds (possibly fractional) given under a "…Sec" name, sent in microseconds under "…USec". */
function seconds(busName: string): Converter {
  return (value, name) => {
    if (value === 'infinity') return [busName, 't', UINT64_MAX];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw invalid(name, value, 'a positive number of seconds or "infinity"');
    }
    return [busName, 't', BigInt(Math.round(value * 1_000_000))];
  };
}

function integer(name: string, signature: 'i' | 'u', min: number, max: number): Converter {
  return (value) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw invalid(name, value, `an integer in ${min}…${max}`);
    }
    return [name, signature, value];
  };
}

/** A string from a fixed set; booleans map to "yes"/"no" where systemd takes them (ProtectSystem=true). */
function oneOf(name: string, allowed: readonly string[], booleans = false): Converter {
  return (value) => {
    const text = booleans && typeof value === 'boolean' ? (value ? 'yes' : 'no') : value;
    if (typeof text !== 'string' || !allowed.includes(text)) throw invalid(name, value, allowed.join('|'));
    return [name, 's', text];
  };
}

/**
 * CPUQuota as systemd.resource-control(5) writes it ("50%", or 50): percent of one CPU, sent as
 * CPUQuotaPerSecUSec, microseconds of CPU time per second (1% = 10 000 µs).
 */
const cpuQuota: Converter = (value, name) => {
  const percent = typeof value === 'string' && /^[0-9]+(\.[0-9]+)?%$/.test(value) ? Number(value.slice(0, -1)) : value;
  if (typeof percent !== 'number' || !Number.isFinite(percent) || percent <= 0 || percent > 100_000) {
    throw invalid(name, value, 'a positive percentage ("50%" or 50)');
  }
  return ['CPUQuotaPerSecUSec', 't', BigInt(Math.round(percent * 10_000))];
};

type Converter = (value: unknown, name: string) => PropertyTuple;

/**
 * Resource limits and hardening. Identity, commands, kill behaviour, capabilities, paths that widen
 * access and anything else we set ourselves are absent, so a configuration can never undo the unit's
 * own settings. Some names can also widen (`Nice=-20`, `OOMScoreAdjust=-1000`, `NoNewPrivileges=false`,
 * `PrivateTmp=false`): the operator is root and may; the hardened profile's own names are not taken
 * from the configuration (unit-properties.ts).
 */
const ALLOWED: Readonly<Record<string, Converter>> = {
  // Resource control (systemd.resource-control(5)).
  MemoryMax: uint64('MemoryMax', { suffixes: true }),
  MemoryHigh: uint64('MemoryHigh', { suffixes: true }),
  MemorySwapMax: uint64('MemorySwapMax', { suffixes: true }),
  TasksMax: uint64('TasksMax'),
  CPUQuota: cpuQuota,
  CPUWeight: uint64('CPUWeight'),
  IOWeight: uint64('IOWeight'),
  // Process limits (systemd.exec(5) "Limit*"): D-Bus takes them as uint64.
  LimitNOFILE: uint64('LimitNOFILE'),
  LimitNPROC: uint64('LimitNPROC'),
  LimitCORE: uint64('LimitCORE', { suffixes: true }),
  LimitFSIZE: uint64('LimitFSIZE', { suffixes: true }),
  LimitDATA: uint64('LimitDATA', { suffixes: true }),
  LimitSTACK: uint64('LimitSTACK', { suffixes: true }),
  LimitAS: uint64('LimitAS', { suffixes: true }),
  LimitMEMLOCK: uint64('LimitMEMLOCK', { suffixes: true }),
  LimitCPU: uint64('LimitCPU'),
  Nice: integer('Nice', 'i', -20, 19),
  OOMScoreAdjust: integer('OOMScoreAdjust', 'i', -1000, 1000),
  UMask: integer('UMask', 'u', 0, 0o777),
  RuntimeMaxSec: seconds('RuntimeMaxUSec'),
  // Sandboxing (systemd.exec(5)).
  NoNewPrivileges: bool('NoNewPrivileges'),
  PrivateTmp: bool('PrivateTmp'),
  PrivateDevices: bool('PrivateDevices'),
  PrivateNetwork: bool('PrivateNetwork'),
  ProtectSystem: oneOf('ProtectSystem', ['no', 'yes', 'full', 'strict'], true),
  ProtectHome: oneOf('ProtectHome', ['no', 'yes', 'read-only', 'tmpfs'], true),
  ProtectProc: oneOf('ProtectProc', ['default', 'noaccess', 'invisible', 'ptraceable']),
  ProcSubset: oneOf('ProcSubset', ['all', 'pid']),
  ProtectKernelTunables: bool('ProtectKernelTunables'),
  ProtectKernelModules: bool('ProtectKernelModules'),
  ProtectKernelLogs: bool('ProtectKernelLogs'),
  ProtectControlGroups: bool('ProtectControlGroups'),
  ProtectClock: bool('ProtectClock'),
  ProtectHostname: bool('ProtectHostname'),
  RestrictSUIDSGID: bool('RestrictSUIDSGID'),
  RestrictRealtime: bool('RestrictRealtime'),
  LockPersonality: bool('LockPersonality'),
  MemoryDenyWriteExecute: bool('MemoryDenyWriteExecute'),
};

export const ALLOWED_LIMIT_NAMES: readonly string[] = Object.freeze(Object.keys(ALLOWED));

/** Converts operator limits to property tuples; any name outside the allowlist is refused. */
export function limitProperties(limits: Readonly<Record<string, unknown>>): PropertyTuple[] {
  const tuples: PropertyTuple[] = [];
  for (const [name, value] of Object.entries(limits)) {
    const convert = Object.hasOwn(ALLOWED, name) ? ALLOWED[name] : undefined;
    if (!convert) throw new SystemdError('PROPERTY_NOT_ALLOWED', `unit property ${name} may not be set`);
    tuples.push(convert(value, name));
  }
  return tuples;
}
