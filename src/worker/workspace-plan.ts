// The workspace profile's Landlock rules as the session helper's arguments (pure). The helper adds the
// START directory itself (by its descriptor, writable), the devices a terminal needs and its own
// terminal; everything else it may reach is listed here. Read is granted by allowlist: Landlock grants
// the union of a path's ancestors' rules, so no narrower rule inside a granted tree could take anything
// away; the user's home is therefore not on the list (docs/security.md "The workspace profile").
import type { SessionConfig } from '../config/index.ts';
import type { SessionProfile } from '../systemd/index.ts';

/**
 * Read and execute: the system's programs, libraries and configuration; /proc and /sys (other
 * processes' entries are closed by Landlock's ptrace rule, /proc/sys and /sys are read-only in the unit);
 * systemd-resolved's directory, where /etc/resolv.conf points on hosts that run it. A path the host
 * lacks grants nothing.
 */
export const WORKSPACE_SYSTEM_READ: readonly string[] = ['/usr', '/etc', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt', '/proc', '/sys', '/run/systemd/resolve'];

/** Writable beside the working directory: the unit's private /tmp and /var/tmp (PrivateTmp=). */
export const WORKSPACE_PRIVATE_WRITE: readonly string[] = ['/tmp', '/var/tmp'];

/**
 * The helper's Landlock arguments for a session of `profile` (the START's, sandbox-request.ts); none
 * outside the workspace profile. The workspace itself is the helper's fd 0, entered at the path
 * cwd-plan.ts gives it (`--cwd-path`, which the helper requires with `--landlock`; planStart passes both).
 */
export function workspaceHelperArgs(session: Pick<SessionConfig, 'workspaceRead' | 'workspaceWrite'>, profile: SessionProfile): string[] {
  if (profile !== 'workspace') return [];
  return [
    '--landlock',
    ...WORKSPACE_SYSTEM_READ.map((path) => `--landlock-read=${path}`),
    // The operator's: the helper follows no symlink on their way (one the user swapped in grants nothing).
    ...session.workspaceRead.map((path) => `--landlock-read-exact=${path}`),
    ...[...WORKSPACE_PRIVATE_WRITE, ...session.workspaceWrite].map((path) => `--landlock-write=${path}`),
  ];
}

/** What PID 1 leaves writable under the workspace profile (ReadWritePaths=): the workspace by its path and the operator's write paths. */
export function workspaceWritablePaths(session: Pick<SessionConfig, 'workspaceWrite'>, profile: SessionProfile, workspacePath: string): string[] {
  return profile === 'workspace' ? [workspacePath, ...session.workspaceWrite] : [];
}

/** The session helper's bound on Landlock paths (native/session/landlock.h MAX_LANDLOCK_PATHS). */
export const HELPER_MAX_LANDLOCK_PATHS = 96;
