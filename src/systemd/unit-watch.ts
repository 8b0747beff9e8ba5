// Watching one unit: the one pure function that decides "done", and the driver that re-reads the
// unit's state on every systemd signal about it (src/run/run.c run_context_check_done).
import type { DbusConnection, SystemdSignal } from './dbus-connection.ts';
import { SystemdError } from './errors.ts';
import { unitObjectPath } from './unit-names.ts';

/** What we read of a unit to judge its phase; `undefined` when the unit is not loaded at all. */
export interface UnitSnapshot {
  loadState: string;
  activeState: string;
  /** Id of the job pending on the unit; 0 when none. */
  jobId: number;
}

/** How the main process ended, as systemd reports it (ExecMainCode is a CLD_* code: 1 exited, 2 killed, 3 dumped). */
export interface ExitStatus {
  code: number;
  status: number;
  result: string;
}

export type UnitPhase = 'gone' | 'running' | 'finished';

/**
 * The one decision: a unit is finished when it is inactive or failed with no job pending (a pending
 * job means a start or stop is still under way); it is gone when not loaded, or loaded only as a
 * "not-found" stub (which a lookup by name can leave behind).
 */
export function unitPhase(snapshot: UnitSnapshot | undefined): UnitPhase {
  if (!snapshot || snapshot.loadState === 'not-found') return 'gone';
  const inactive = snapshot.activeState === 'inactive' || snapshot.activeState === 'failed';
  return inactive && snapshot.jobId === 0 ? 'finished' : 'running';
}

/** True for a signal that may change what we know about the unit. */
export function concernsUnit(signal: SystemdSignal, name: string, path: string = unitObjectPath(name)): boolean {
  switch (signal.kind) {
    case 'properties-changed':
      return signal.path === path;
    case 'job-removed':
    case 'unit-removed':
      return signal.unit === name;
    case 'systemd-reconnected':
      return true;
  }
}

/** What the watch needs of a connection (the connection itself, or a fake in tests). */
export type SignalSource = Pick<DbusConnection, 'onSignal' | 'onClose'>;

export interface WatchOptions {
  /** A deadline for the wait (code 'UNIT_WAIT_TIMEOUT'); none by default, a session may run for days. */
  timeoutMs?: number;
}

export interface WatchDriverOptions<T> extends WatchOptions {
  /** Decides from a signal's own content, before any read: a value ends the watch at once, even
   * while an evaluation is still waiting for its reads (exit-from-signals.ts). */
  decide?: (signal: SystemdSignal) => T | undefined;
  /** Signals that wake no evaluation of their own, because another signal follows them at once. */
  ignore?: (signal: SystemdSignal) => boolean;
  /** The caller knows the unit is not finished (its signals said so): no evaluation until a signal. */
  known?: boolean;
}

/**
 * Calls `evaluate` now and again after every signal about the unit, one evaluation at a time (a
 * signal during one schedules exactly one more), until it or `decide` returns a value. The connection's match
 * rule and Subscribe are in place before any unit starts, so a change cannot slip between reads:
 * each evaluation reads fresh state, and any change after it arrives as a signal.
 */
export function watchUnit<T>(
  connection: SignalSource,
  name: string,
  evaluate: () => Promise<T | undefined>,
  options: WatchDriverOptions<T> = {},
): Promise<T> {
  const path = unitObjectPath(name);
  return new Promise<T>((resolve, reject) => {
    let finished = false;
    let running = false;
    let again = false;
    const finish = (error: unknown, value?: T): void => {
      if (finished) return;
      finished = true;
      stopSignals();
      stopClose();
      if (timer) clearTimeout(timer);
      if (error) reject(error);
      else resolve(value as T);
    };
    const run = async (): Promise<void> => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        do {
          again = false;
          const value = await evaluate();
          if (value !== undefined) return finish(undefined, value);
        } while (again && !finished);
      } catch (error) {
        finish(error);
      } finally {
        running = false;
      }
    };
    const stopSignals = connection.onSignal((signal) => {
      if (finished || !concernsUnit(signal, name, path)) return;
      const decided = options.decide?.(signal);
      if (decided !== undefined) return finish(undefined, decided);
      if (!options.ignore?.(signal)) void run();
    });
    const stopClose = connection.onClose((error) => finish(error));
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(
            () => finish(new SystemdError('UNIT_WAIT_TIMEOUT', `${name}: not done within ${options.timeoutMs} ms`, { unit: name })),
            options.timeoutMs,
          );
    if (!options.known) void run();
  });
}
