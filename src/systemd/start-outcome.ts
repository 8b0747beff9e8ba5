// Whether a start job that ended "failed" still started the program: Type=exec races a program
// that exits at once (service.c: the main process's SIGCHLD is dispatched before the exec fd's event).
import type { ExitStatus } from './unit-watch.ts';

/** CLD_* codes in ExecMainCode (waitid(2)). */
const CLD_EXITED = 1;
const CLD_KILLED = 2;
const CLD_DUMPED = 3;

/**
 * systemd reserves the statuses from 200 up (systemd.exec(5) "Process Exit Codes": 200-245 for
 * failures before the exec, 255 EXIT_EXCEPTION; this systemd uses 200-244, `systemd-analyze
 * exit-status`), so every status from 200 counts as a failure to start, even one a program chose.
 */
const SYSTEMD_EXIT_FIRST = 200;

/**
 * True when the job failed only because the program ended before PID 1 saw its exec: it exited with
 * a status of its own, or a signal ended it. The session then started and ended, and its exit is
 * the answer (EXIT), not a start failure. A status in systemd's range stays a start failure here;
 * the session, though, counts as started on the helper's PID message (the helper writes STARTED), before
 * the job ends, and a job that fails after that is only logged: the session then ends as any started one.
 */
export function programRan(jobResult: string, exit: ExitStatus | undefined): boolean {
  if (jobResult !== 'failed' || !exit) return false;
  if (exit.code === CLD_KILLED || exit.code === CLD_DUMPED) return true;
  return exit.code === CLD_EXITED && exit.status < SYSTEMD_EXIT_FIRST;
}
