// Where the session helper enters the working directory (pure): under a profile whose unit has a mount
// namespace of its own (hardened, workspace), by its path in that namespace, checked there to be the
// START's directory (native/session/cwd.c). The client's descriptor comes from the client's namespace,
// and `..` from it walks the client's tree, past every mount of the unit (its private /tmp, its hidden
// paths): docs/security.md. The default profile's unit has no namespace of its own: the descriptor is it.
import { ErrorCode, SessionError } from '../protocol/index.ts';
import type { SessionProfile } from '../systemd/index.ts';

/** Whether a unit of `profile` has a mount namespace of its own (session-profile.ts: PrivateTmp= and the hidden paths). */
export function hasOwnMountNamespace(profile: SessionProfile): boolean {
  return profile !== 'default';
}

/** The longest path open(2) takes (PATH_MAX 4096, its NUL included). */
export const MAX_CWD_PATH_BYTES = 4095;

/**
 * The helper's `--cwd-path` for a session of `profile` (the START's, sandbox-request.ts; never the floor
 * alone). `cwdPath`: the START directory's path as root sees its descriptor (readlink of /proc/self/fd).
 * It is one element of ExecStart's argv, never unit-file text, so it needs what the client's own argv
 * needs (unit-properties.ts execArgv: `$` doubled, systemd escapes the rest) and what open(2) takes:
 * absolute, no NUL, at most PATH_MAX. Whitespace, quotes, `:` and `\` pass (a directory such as
 * `~/My Project`); the helper takes the value whole from `--cwd-path=` (native/session/main.c) and goes
 * on only if it leads to the START's very directory. The workspace profile also writes it into its unit,
 * and holds it to that there (workspace-plan.ts workspaceMounts). One it could not be given is a refusal.
 */
export function cwdHelperArgs(profile: SessionProfile, cwdPath: string): string[] {
  if (!hasOwnMountNamespace(profile)) return [];
  const enterable = cwdPath.startsWith('/') && !cwdPath.includes('\0') && Buffer.byteLength(cwdPath) <= MAX_CWD_PATH_BYTES && !cwdPath.endsWith(' (deleted)');
  if (!enterable) {
    throw new SessionError(ErrorCode.BAD_START, `${profile} refused: the working directory has no path the session could enter (${JSON.stringify(cwdPath.slice(0, 256))})`);
  }
  return [`--cwd-path=${cwdPath}`];
}
