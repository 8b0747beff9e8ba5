// The systemd side's door: session units over D-Bus (start, watch, stop), their pure property builders, sd_notify.
export { openBusSession, type BusSession, type Units } from './bus-session.ts';
export { warmUpCodec } from './dbus-connection.ts';
export { unitMatchRules } from './match-rules.ts';
export { notify, watchdogIntervalMs } from './notify.ts';
export { checkHelperOptions, helperOptions } from './helper-options.ts';
export { limitProperties } from './unit-limits.ts';
export { UnitManager, type ServiceState, type StartedSession } from './unit-manager.ts';
export { BROKER_UNIT, DEFAULT_UNIT_PREFIX, WARM_UNIT_DESCRIPTION, isSessionUnitName, unitNameFor, sessionIdOf } from './unit-names.ts';
export { sessionUnitProperties, UNIT_PATH, type SessionUnitSpec } from './unit-properties.ts';
export { programLabel } from './unit-text.ts';
export { SESSION_PROFILES, type SessionProfile } from './session-profile.ts';
export { PROGRAM_OOM_SCORE_ADJ, type SessionBudgets, type SessionNetwork } from './session-sandbox.ts';
export { type ExitStatus } from './unit-watch.ts';
