// How a session's end maps to a shell's exit status ($?), from systemd's ExecMainCode/ExecMainStatus.

/** CLD_EXITED, CLD_KILLED, CLD_DUMPED (waitid(2)): the codes an EXIT frame carries. */
const EXITED = 1;
const KILLED = 2;
const DUMPED = 3;

/** Used when no program status applies (a session stopped on request). */
export const GENERIC_FAILURE = 1;

/**
 * Exited → its status; killed or dumped → 128 + the signal, as a shell reports it (systemd counts SIGINT
 * and friends as Result=success, so the status must come from the code, never from the result).
 * Anything else, such as a stopped session's code 0 → 1.
 */
export function exitStatus(end: { code: number; status: number }): number {
  if (end.code === EXITED) return end.status & 0xff;
  if (end.code === KILLED || end.code === DUMPED) return 128 + end.status;
  return GENERIC_FAILURE;
}
