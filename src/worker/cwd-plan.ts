// Where the session helper enters the working directory (pure): under a profile whose unit has a mount
// namespace of its own (hardened, workspace), by its path in that namespace, checked there to be the
// START's directory (native/session/cwd.c). The client's descriptor comes from the client's namespace,
// and `..` from it walks the client's tree, past every mount of the unit (its private /tmp, its hidden
// paths): docs/security.md. The default profile's unit has no namespace of its own: the descriptor is it.
import { ErrorCode, SessionError } from '../protocol/index.ts';
import { UNIT_PATH, type SessionProfile } from '../systemd/index.ts';

/** Whether a unit of `profile` has a mount namespace of its own (session-profile.ts: PrivateTmp= and the hidden paths). */
export function hasOwnMountNamespace(profile: SessionProfile): boolean {
  return profile !== 'default';
}

/**
 * The helper's `--cwd-path` for a session of `profile` (the START's, sandbox-request.ts; never the floor
 * alone). `cwdPath`: the START directory's path as root sees its descriptor (readlink of /proc/self/fd).
 * One the helper could not be given, or a unit file could not carry (the workspace profile also hands
 * it to PID 1 as ReadWritePaths=; one rule for both), is a refusal before any unit.
 */
export function cwdHelperArgs(profile: SessionProfile, cwdPath: string): string[] {
  if (!hasOwnMountNamespace(profile)) return [];
  if (!/^\/[^\0-\x1f\x7f\\]*$/.test(cwdPath) || cwdPath.endsWith(' (deleted)')) {
    throw new SessionError(ErrorCode.BAD_START, `${profile} refused: the working directory has no path the session could enter (${JSON.stringify(cwdPath)})`);
  }
  if (!UNIT_PATH.test(cwdPath)) {
    const why = profile === 'workspace' ? 'cannot be made writable by systemd' : 'cannot be written into the session\'s unit';
    throw new SessionError(ErrorCode.BAD_START, `${profile} refused: the working directory's path ${why} (no whitespace, quotes or ':'): ${JSON.stringify(cwdPath)}`);
  }
  return [`--cwd-path=${cwdPath}`];
}
