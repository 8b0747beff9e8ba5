// What a warm unit is and which START may draw one (pure). A warm unit is started before its START, so
// what systemd 252 cannot change on a running unit (RuntimeMaxSec=, OOMScoreAdjust=, PrivateNetwork=,
// NoNewPrivileges=: set-property rejects them) must be the same for every START it could serve: the
// operator's session.properties and the floor session.minProfile, with the network on and no budget; a
// START that asks for more takes a fresh unit (sandboxFitsWarm). RuntimeMaxSec= alone differs: it counts from the unit's
// activation, wait included, so a warm unit goes without it and a root timer started at START stands in
// (warmWallClockMs). docs/architecture.md "Warm units".
import type { Config } from '../config/index.ts';
import { WARM_UNIT_DESCRIPTION, type SessionUnitSpec } from '../systemd/index.ts';

/** How long a drawn helper has to answer CLAIM before its unit is stopped and the START starts a fresh
 * one: a helper that runs answers in well under a millisecond; a SIGSTOPped or killed one never does. */
export const WARM_CLAIM_TIMEOUT_MS = 250;

/** The unit's description: no START's bytes are known yet. */
export const WARM_DESCRIPTION = WARM_UNIT_DESCRIPTION;

/** The warm unit's spec less its descriptors: a fresh unit's, with the helper told only `--warm`. */
export function warmUnitSpec(config: Config, helperPath: string): Omit<SessionUnitSpec, 'cwdFd' | 'stdoutFd' | 'stderrFd'> {
  const { RuntimeMaxSec: _counted, ...limits } = config.session.properties;
  return {
    description: WARM_DESCRIPTION,
    helperPath,
    helperArgs: ['--warm'],
    user: config.client.user,
    group: config.client.group,
    environment: {},
    slice: config.session.slice,
    stopTimeoutSec: config.session.stopTimeoutSec,
    limits,
    profile: config.session.minProfile,
  };
}

/** RuntimeMaxSec= as the wall clock a root timer holds from START (undefined: none, or "infinity"). */
export function warmWallClockMs(config: Config): number | undefined {
  const value = config.session.properties.RuntimeMaxSec;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value * 1000) : undefined;
}

/**
 * Whether a START may draw the spare's warm unit. A kept START with a wall clock goes to a fresh unit:
 * its deadline would have to outlive this worker (as a kept session's keep deadline does), and only
 * systemd's own RuntimeMaxSec= does that today.
 */
export function warmFits(config: Config, kept: boolean): boolean {
  if (config.session.warmUnits < 1 || config.session.minProfile === 'workspace') return false;
  return !(kept && warmWallClockMs(config) !== undefined);
}

/**
 * Whether a START's sandbox (sandbox-request.ts) is the warm unit's: its profile the floor it was
 * started with, the network on and no budget. PrivateNetwork= cannot be set on a running unit, and the
 * budgets are confirmed on the started unit before GO (guarantees.ts): either takes a fresh unit.
 */
export function sandboxFitsWarm(sandbox: { profile: string; network: string; budgets: object }, config: Config): boolean {
  // The workspace profile's unit binds the START directory's .git (BindReadOnlyPaths=): never warm.
  if (sandbox.profile === 'workspace') return false;
  return sandbox.profile === config.session.minProfile && sandbox.network === 'on' && Object.values(sandbox.budgets).every((value) => value === undefined);
}
