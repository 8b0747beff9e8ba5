// What a START may ask for (protocol version 4), as the operator bounds it (pure): the profiles a client may
// name and the floor every session gets, the network ceiling and default, each budget's ceiling and default.
// Nothing here widens a session silently: a request outside these is refused (src/worker/sandbox-request.ts).
import { BUDGET_FIELDS, MAX_BUDGET, NETWORK_MODES, type Budgets, type NetworkMode } from '../protocol/index.ts';
import { SESSION_PROFILES, type SessionProfile } from '../systemd/index.ts';
import { ConfigError, integer, object, only, type Json } from './fields.ts';

/** One budget as the operator bounds it: the most a START may ask (null: no ceiling) and what a START that
 * asks none gets (null: no budget). With a ceiling, a START asking none gets the default, else the ceiling. */
export interface BudgetLimit {
  max: number | null;
  default: number | null;
}
export type BudgetLimits = Record<keyof Budgets, BudgetLimit>;

export interface SandboxConfig {
  /** The floor: every session gets at least this profile; a START naming none gets it; one naming a lower one is refused. */
  minProfile: SessionProfile;
  /** The profiles a START may name, each at or above the floor (the floor is always allowed). */
  profiles: SessionProfile[];
  /** The most network a START may ask for, and what one asking none gets. */
  maxNetwork: NetworkMode;
  defaultNetwork: NetworkMode;
  budgets: BudgetLimits;
}

/** CPUQuota= in percent of one CPU: systemd takes more than 100 % (several CPUs); our limit is 1000 CPUs. */
export const MAX_CPU_PERCENT = 100_000;

/** The kernel's own bound on tasks (PID_MAX_LIMIT, 2^22): a TasksMax= above it would be no budget. */
export const MAX_TASKS = 4_194_304;
/** The most each budget can be, from a START or the config: beyond it a value is no budget systemd keeps. */
export const BUDGET_MAX: Record<keyof Budgets, number> = { timeMs: MAX_BUDGET, memoryBytes: MAX_BUDGET, tasks: MAX_TASKS, cpuPercent: MAX_CPU_PERCENT };

export const DEFAULT_SANDBOX: SandboxConfig = {
  minProfile: 'default',
  profiles: [...SESSION_PROFILES],
  maxNetwork: 'on',
  defaultNetwork: 'on',
  budgets: { timeMs: { max: null, default: null }, memoryBytes: { max: null, default: null }, tasks: { max: null, default: null }, cpuPercent: { max: null, default: null } },
};

/** The session.* keys this module reads; `profile` is the floor's older name. */
export const SANDBOX_KEYS = ['minProfile', 'profile', 'profiles', 'maxNetwork', 'defaultNetwork', 'budgets'];

/** A profile's place in the order default < hardened < workspace (SESSION_PROFILES' order), -1 when unknown. */
export function profileRank(name: string): number {
  return (SESSION_PROFILES as readonly string[]).indexOf(name);
}

/** A network mode's place in the order off < host-loopback < on, -1 when unknown. */
export function networkRank(mode: string): number {
  return (NETWORK_MODES as readonly string[]).indexOf(mode);
}

function profileName(value: unknown, field: string): SessionProfile {
  if (typeof value !== 'string' || profileRank(value) < 0) throw new ConfigError(field, `must be one of ${SESSION_PROFILES.join(', ')}`);
  return value as SessionProfile;
}

function networkMode(value: unknown, field: string, fallback: NetworkMode): NetworkMode {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || networkRank(value) < 0) throw new ConfigError(field, `must be one of ${NETWORK_MODES.join(', ')}`);
  return value as NetworkMode;
}

function floor(value: Json): SessionProfile {
  const min = value.minProfile === undefined ? undefined : profileName(value.minProfile, 'session.minProfile');
  const older = value.profile === undefined ? undefined : profileName(value.profile, 'session.profile');
  if (min !== undefined && older !== undefined && min !== older) {
    throw new ConfigError('session.profile', `is the older name of session.minProfile and says ${older}, not ${min}: keep one`);
  }
  return min ?? older ?? DEFAULT_SANDBOX.minProfile;
}

function budgetLimits(raw: unknown): BudgetLimits {
  const value = object(raw, 'session.budgets');
  only(value, 'session.budgets', [...BUDGET_FIELDS]);
  const limits = {} as BudgetLimits;
  for (const name of BUDGET_FIELDS) {
    const field = `session.budgets.${name}`;
    const entry = object(value[name], field);
    only(entry, field, ['max', 'default']);
    const read = (key: 'max' | 'default') => (entry[key] === undefined || entry[key] === null ? null : integer(entry[key], `${field}.${key}`, 0, 1, BUDGET_MAX[name]));
    const max = read('max');
    const fallback = read('default');
    if (max !== null && fallback !== null && fallback > max) throw new ConfigError(`${field}.default`, `must not exceed ${field}.max (${max})`);
    // With a ceiling and no default, a START that asks no budget gets the ceiling: none escapes it.
    limits[name] = { max, default: fallback ?? max };
  }
  return limits;
}

/** The sandbox settings of session.* (`value` is the session object). */
export function sandboxSettings(value: Json): SandboxConfig {
  const minProfile = floor(value);
  let profiles = DEFAULT_SANDBOX.profiles.filter((name) => profileRank(name) >= profileRank(minProfile));
  if (value.profiles !== undefined) {
    if (!Array.isArray(value.profiles)) throw new ConfigError('session.profiles', 'must be a list of profile names');
    profiles = value.profiles.map((name, index) => profileName(name, `session.profiles[${index}]`));
    const below = profiles.find((name) => profileRank(name) < profileRank(minProfile));
    if (below) throw new ConfigError('session.profiles', `lists ${below}, below session.minProfile (${minProfile}): no START may have it`);
    if (!profiles.includes(minProfile)) profiles.unshift(minProfile);
  }
  const maxNetwork = networkMode(value.maxNetwork, 'session.maxNetwork', DEFAULT_SANDBOX.maxNetwork);
  const defaultNetwork = networkMode(value.defaultNetwork, 'session.defaultNetwork', maxNetwork);
  if (networkRank(defaultNetwork) > networkRank(maxNetwork)) {
    throw new ConfigError('session.defaultNetwork', `must not exceed session.maxNetwork (${maxNetwork})`);
  }
  return { minProfile, profiles: [...new Set(profiles)], maxNetwork, defaultNetwork, budgets: budgetLimits(value.budgets) };
}
