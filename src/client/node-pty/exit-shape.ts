// A session's end in node-pty's shape: { exitCode, signal } as its onExit reports it on Unix.
import type { SessionEnd } from '../session.ts';

export interface IExitEvent {
  exitCode: number;
  /** The signal that ended the program, 0 when none did (node-pty's Unix shape). */
  signal?: number;
}

/** SIGHUP: what the program sees when the session is ended (systemd stops the unit with SendSIGHUP=yes),
 * and what node-pty's own kill() sends. */
const SIGHUP = 1;

/** timeout(1)'s status for a command that ran out of time; a shell's for one killed by SIGKILL. */
const TIMEOUT_EXIT = 124;
const SIGKILL = 9;

/**
 * systemd's ExecMainCode: 1 exited (status = exit code), 2 killed, 3 dumped (status = signal). A session a
 * budget ended (docs/client.md "How a session ends"): its wall clock → exitCode 124 (timeout(1)'s), with the
 * signal that ended the program; the OOM killer → exitCode 137 and signal 9, whatever the program's own end.
 */
export function exitEvent(end: SessionEnd): IExitEvent {
  if (end.result === 'timeout') return { exitCode: TIMEOUT_EXIT, signal: end.code === 2 || end.code === 3 ? end.status : 0 };
  if (end.result === 'oom-kill') return { exitCode: 128 + SIGKILL, signal: SIGKILL };
  if (end.code === 2 || end.code === 3) return { exitCode: 0, signal: end.status };
  if (end.code === 1) return { exitCode: end.status, signal: 0 };
  // An observer's kill() ended its own view; the session goes on.
  if (end.reason === 'detached') return { exitCode: 0, signal: 0 };
  // Stopped, and the server does not say how the program ended (protocol version 1).
  if (end.reason === 'stopped') return { exitCode: 0, signal: SIGHUP };
  // No main process status at all (the unit failed around it): not a clean exit.
  return { exitCode: 1, signal: 0 };
}

/** What onExit reports when the supervisor refused or failed the session (unreachable, timed out, ERROR,
 * connection lost): the status the CLI uses for "the runner itself failed". */
export const FAILURE_EXIT: IExitEvent = { exitCode: 125, signal: 0 };
