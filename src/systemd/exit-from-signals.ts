// A started unit's state and end as its own change signals tell them, so its watch need not read it.
// systemd sends PropertiesChanged for the type's interface first, then for the Unit interface, each
// with every property that emits changes, so that "clients may rely on this order to get atomic
// behavior" (src/core/dbus-unit.c, send_changed_signal): a Unit signal saying inactive (or failed)
// with no job comes right after the Service signal of the same change, which holds ExecMainCode,
// ExecMainStatus and Result as they are then. What the signals do not settle (none seen, a systemd
// that sends less, a state with no exit beside it) is left to a read, as before.
import type { SystemdSignal } from './dbus-connection.ts';
import { SERVICE_INTERFACE, UNIT_INTERFACE } from './unit-state.ts';
import { unitPhase, type ExitStatus } from './unit-watch.ts';

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
 * Every change signal of the unit at `path`, fed from before its start was asked for (the match rules
 * are in force by then), by the one who references it (AddRef): loaded for as long as the reference
 * lasts, so only its active state and job decide (unitPhase), as a read would.
 */
export class UnitSignals {
  readonly path: string;
  /** How the unit ended, once a Unit signal said it finished right after its Service signal; final,
   * since a transient unit never starts again. */
  exit: ExitStatus | undefined;
  /** The active state the unit finished in (inactive or failed), with `exit`. */
  finalState: string | undefined;
  /** The latest Unit signal said the unit is not finished (starting, running or stopping). */
  running = false;
  #serviceExit: ExitStatus | undefined;

  constructor(path: string) {
    this.path = path;
  }

  /** Takes one signal; the exit when this one settled it. */
  feed(signal: SystemdSignal): ExitStatus | undefined {
    if (this.exit) return undefined;
    if (signal.kind === 'systemd-reconnected') {
      // What changed while systemd re-executed was sent to no one: the next watch reads.
      this.#serviceExit = undefined;
      this.running = false;
      return undefined;
    }
    if (signal.kind !== 'properties-changed' || signal.path !== this.path) return undefined;
    if (signal.interface === SERVICE_INTERFACE) {
      this.#serviceExit = serviceExit(signal.changed);
      return undefined;
    }
    if (signal.interface !== UNIT_INTERFACE) return undefined;
    // The Service signal of this change came just before; one from an older change does not count.
    const last = this.#serviceExit;
    this.#serviceExit = undefined;
    const state = unitState(signal.changed);
    const finished = state !== undefined && unitPhase({ loadState: 'loaded', ...state }) === 'finished';
    this.running = state !== undefined && !finished;
    if (finished && last) {
      this.exit = last;
      this.finalState = state.activeState;
    }
    return this.exit;
  }
}

/** A Service signal of the unit: the Unit signal of the same change comes right after it (see above),
 * so a watch reads nothing for it and decides on that one. */
export function precedesUnitSignal(signal: SystemdSignal, path: string): boolean {
  return signal.kind === 'properties-changed' && signal.path === path && signal.interface === SERVICE_INTERFACE;
}
