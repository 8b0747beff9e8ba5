// What install and verify say about the workspace profile on this host (pure): it needs Landlock ABI 6
// (native/session/landlock.c), which the installed session helper reports (`--landlock-abi`). Without
// it every workspace START is refused (START_FAILED), never run unconfined.
import type { LimitReport } from './cgroup-limits.ts';

/** Landlock ABI 6: file-system rules, and the scopes for signals and abstract Unix sockets. */
export const WORKSPACE_LANDLOCK_ABI = 6;

/** `said`: the helper's answer (an ABI number, or a negative errno); undefined when it could not be run. */
/** `profile`: the floor every session gets (session.minProfile). */
export function landlockReport(profile: string, said: string | undefined): LimitReport {
  const abi = said === undefined ? Number.NaN : Number.parseInt(said.trim(), 10);
  const known = Number.isInteger(abi);
  const have = !known ? 'cannot be told (the session helper did not answer)' : abi < 0 ? `is not available (errno ${-abi}: not built into this kernel, or not in its lsm= list)` : `is ABI ${abi}`;
  if (known && abi >= WORKSPACE_LANDLOCK_ABI) return { note: `Landlock ${have}: the workspace profile can be enforced here` };
  const needs = `the workspace profile needs Landlock ABI ${WORKSPACE_LANDLOCK_ABI}; here Landlock ${have}`;
  if (profile === 'workspace') return { warning: `session.minProfile is workspace, but ${needs}: every START is refused (START_FAILED), none runs unconfined` };
  return { note: needs };
}
