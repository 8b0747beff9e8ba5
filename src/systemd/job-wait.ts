// Waiting for a start job: its JobRemoved result, and the helper's PID from the unit's change
// signals on the way, so a start needs no property read after its job.
import type { DbusConnection, SystemdSignal } from './dbus-connection.ts';
import { SystemdError } from './errors.ts';
import { unitObjectPath } from './unit-names.ts';
import { SERVICE_INTERFACE } from './unit-state.ts';

export interface JobWait {
  result(jobPath: string): Promise<string>;
  cancel(): void;
  mainPid(): number | undefined;
}

/**
 * Listens before the start is asked for, so the job's end cannot arrive before we look for it: the
 * JobRemoved result of the unit's job at `jobPath`, remembering results that came early, and the
 * helper's PID from the unit's change signals: systemd sends those before JobRemoved (dbus-job.c,
 * bus_job_send_removed_signal), and ExecMainPID is set at the fork. `onMainPid` hears the first one.
 */
export function awaitJob(connection: Pick<DbusConnection, 'onSignal' | 'onClose'>, name: string, timeoutMs: number, onMainPid?: (pid: number) => void): JobWait {
  const seen = new Map<string, string>();
  const path = unitObjectPath(name);
  let mainPid: number | undefined;
  let wanted: { path: string; resolve: (result: string) => void } | undefined;
  const stop = connection.onSignal((signal: SystemdSignal) => {
    if (signal.kind === 'properties-changed' && signal.path === path && signal.interface === SERVICE_INTERFACE) {
      const pid = signal.changed.ExecMainPID;
      if (typeof pid === 'number' && Number.isInteger(pid) && pid > 0) {
        const first = mainPid === undefined;
        mainPid = pid;
        if (first) onMainPid?.(pid);
      }
      return;
    }
    if (signal.kind !== 'job-removed' || signal.unit !== name) return;
    if (wanted?.path === signal.job) wanted.resolve(signal.result);
    else seen.set(signal.job, signal.result);
  });
  return {
    cancel: stop,
    mainPid: () => mainPid,
    result: (jobPath) =>
      new Promise<string>((resolve, reject) => {
        const finish = (error: unknown, result?: string): void => {
          stop();
          stopClose();
          clearTimeout(timer);
          if (error) reject(error);
          else resolve(result!);
        };
        const stopClose = connection.onClose((error) => finish(error));
        const timer = setTimeout(
          () => finish(new SystemdError('UNIT_START_FAILED', `${name}: start job not finished within ${timeoutMs} ms`, { jobResult: 'timeout', unit: name })),
          timeoutMs,
        );
        const early = seen.get(jobPath);
        if (early !== undefined) finish(undefined, early);
        else wanted = { path: jobPath, resolve: (result) => finish(undefined, result) };
      }),
  };
}
