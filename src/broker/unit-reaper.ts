// Stopping a session unit the broker answers for (a dead worker's, an earlier run's) is never fatal:
// stop and wait; if that fails, SIGKILL every process and wait again; whatever still remains is
// logged and left to the next start's orphan cleanup, and every other session goes on.
import type { Logger } from '../log.ts';

/** What the reaper needs of the unit manager (the reconnecting one in the broker, a fake in tests). */
export interface UnitStopper {
  stopAndWait(unit: string, timeoutMs: number): Promise<void>;
  kill(unit: string, signal: number | NodeJS.Signals): Promise<void>;
}

export interface ReapTimes {
  /** The orderly stop: the unit's TimeoutStopSec (SIGTERM, then systemd's own SIGKILL) and a margin. */
  stopWaitMs: number;
  /** After our SIGKILL: one more bounded wait for the unit to go. */
  killWaitMs: number;
}

export type ReapOutcome = 'stopped' | 'killed' | 'left';

function reason(error: unknown): string {
  const code = (error as { code?: string })?.code;
  const message = (error as Error)?.message ?? String(error);
  return code ? `${message} (${code})` : message;
}

/** Resolves with how the unit went; never rejects. */
export async function reapUnit(units: UnitStopper, unit: string, times: ReapTimes, log: Logger): Promise<ReapOutcome> {
  try {
    await units.stopAndWait(unit, times.stopWaitMs);
    return 'stopped';
  } catch (error) {
    log('warning', `cannot stop ${unit}: ${reason(error)}; sending SIGKILL and retrying`);
  }
  try {
    // KillUnit who="all": every process of the unit, by cgroup (never kill(pid) as root).
    await units.kill(unit, 'SIGKILL');
  } catch (error) {
    log('warning', `SIGKILL to ${unit}: ${reason(error)}`);
  }
  try {
    await units.stopAndWait(unit, times.killWaitMs);
    log('notice', `${unit} stopped after SIGKILL`);
    return 'killed';
  } catch (error) {
    log('error', `${unit} still remains (${reason(error)}); the next start's orphan cleanup stops it`);
    return 'left';
  }
}
