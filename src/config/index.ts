// The supervisor's configuration: its shape and defaults, loading and validating the file.
export { loadConfig } from './load.ts';
export { checkSessionProperty } from './properties.ts';
export { BUDGET_MAX, DEFAULT_SANDBOX, MAX_CPU_PERCENT, networkRank, profileRank, type BudgetLimit, type BudgetLimits, type SandboxConfig } from './sandbox.ts';
export {
  DEFAULT_LIMITS,
  DEFAULT_SESSION,
  DEFAULT_SOCKET_PATH,
  HANG_UP_GRACE_MS,
  MAX_RETAINED_BYTES,
  MIN_RETAINED_BYTES,
  stoppingSessionBoundMs,
  unitStopWaitMs,
  type Config,
  type SessionConfig,
} from './schema.ts';
