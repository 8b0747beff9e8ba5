// A referenced unit's end as its own change signals tell it, so the watch need not read it back.
// systemd sends PropertiesChanged for the type's interface first, then for the Unit interface, each
// with every property that emits changes, so that "clients may rely on this order to get atomic
// behavior" (src/core/dbus-unit.c, send_changed_signal): a Unit signal saying inactive (or failed)
// with no job comes right after the Service signal of the same change, which holds ExecMainCode,
// ExecMainStatus and Result as they are then. Without both, since the watch began, nothing is decided
// here and the watch reads the unit as before (a signal lost to a bus restart, a systemd that sends
// less, or one that names no state).
import type { SystemdSignal } from './dbus-connection.ts';
import { SERVICE_INTERFACE, UNIT_INTERFACE } from './unit-state.ts';
import { unitPhase, type ExitStatus } from './unit-watch.ts';

export interface SignalledExit {
  /** Feeds one signal about the unit; the exit once the signals say the unit is finished. */
  (signal: SystemdSignal): ExitStatus | undefined;
}

const isInt = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);

/** The Service interface's exit figures in a change signal, when all three are there. */
function serviceExit(changed: Record<string, unknown>): ExitStatus | undefined {
  const { ExecMainCode: code, ExecMainStatus: status, Result: result } = changed;
  return isInt(code) && isInt(status) && typeof result === 'string' ? { code, status, result } : undefined;
}

/** The Unit interface's state in a change signal: ActiveState and the pending job's id ("(uo)", 0 for none). */
function unitState(changed: Record<string, unknown>): { activeState: string; jobId: number } | undefined {
  const { ActiveState: activeState, Job: job } = changed;
  if (typeof activeState !== 'string' || !Array.isArray(job) || !isInt(job[0])) return undefined;
  return { activeState, jobId: job[0] };
}

/**
 * For one watch of the unit at `path`, which the caller references (AddRef): loaded for as long as
 * the reference lasts, so only its active state and job decide (unitPhase), as a read would.
 */
export function signalledExit(path: string): SignalledExit {
  let exit: ExitStatus | undefined;
  return (signal) => {
    if (signal.kind !== 'properties-changed' || signal.path !== path) return undefined;
    if (signal.interface === SERVICE_INTERFACE) {
      exit = serviceExit(signal.changed);
      return undefined;
    }
    if (signal.interface !== UNIT_INTERFACE) return undefined;
    // The Service signal of this change came just before; one from an older change does not count.
    const last = exit;
    exit = undefined;
    const state = unitState(signal.changed);
    if (!last || !state) return undefined;
    return unitPhase({ loadState: 'loaded', ...state }) === 'finished' ? last : undefined;
  };
}

/** A Service signal of the unit: the Unit signal of the same change comes right after it (see above),
 * so a watch reads nothing for it and decides on that one. */
export function precedesUnitSignal(signal: SystemdSignal, path: string): boolean {
  return signal.kind === 'properties-changed' && signal.path === path && signal.interface === SERVICE_INTERFACE;
}
