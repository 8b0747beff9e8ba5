// The workspace profile's Landlock rules as the session helper's arguments (pure). The helper adds the
// START directory itself (by its descriptor, writable), the devices a terminal needs and its own
// terminal; everything else it may reach is listed here. Read is granted by allowlist: Landlock grants
// the union of a path's ancestors' rules, so no narrower rule inside a granted tree could take anything
// away; the user's home is therefore not on the list (docs/security.md "The workspace profile").
import type { SessionConfig } from '../config/index.ts';
import { ErrorCode, SessionError } from '../protocol/index.ts';
import { UNIT_PATH, type SessionProfile } from '../systemd/index.ts';

/**
 * Read and execute: the system's programs, libraries and configuration; /proc and /sys (other
 * processes' entries are closed by Landlock's ptrace rule, /proc/sys and /sys are read-only in the unit);
 * systemd-resolved's directory, where /etc/resolv.conf points on hosts that run it. A path the host
 * lacks grants nothing.
 */
export const WORKSPACE_SYSTEM_READ: readonly string[] = ['/usr', '/etc', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt', '/proc', '/sys', '/run/systemd/resolve'];

/** Writable beside the working directory: the unit's private /tmp and /var/tmp (PrivateTmp=). */
export const WORKSPACE_PRIVATE_WRITE: readonly string[] = ['/tmp', '/var/tmp'];

/** `path` is strictly below `base` (both plain absolute paths). */
function below(path: string, base: string): boolean {
  return path.startsWith(`${base}/`);
}

/**
 * The account's home as the unit covers it (an empty read-only file system): from the account database,
 * never the client; one that is not a plain absolute path a unit file can carry, or the root, refuses the
 * START (nothing could be hidden, so nothing runs).
 */
export function homeToCover(home: string | undefined): string {
  const plain = home !== undefined && UNIT_PATH.test(home) && home !== '/' && !home.endsWith('/') && home.split('/').slice(1).every((part) => part !== '' && part !== '.' && part !== '..');
  if (!plain) throw new SessionError(ErrorCode.BAD_START, `workspace refused: the account's home cannot be hidden from the session (${JSON.stringify(home ?? null)})`);
  return home;
}

/**
 * The helper's Landlock arguments for a session of `profile` (the START's, sandbox-request.ts); none
 * outside the workspace profile. The workspace itself is the helper's fd 0, entered at the path
 * cwd-plan.ts gives it (`--cwd-path`, which the helper requires with `--landlock`; planStart passes both).
 * `home`: the account's, which the unit covers and the helper checks is covered (native/session/mounts.c).
 */
export function workspaceHelperArgs(session: Pick<SessionConfig, 'workspaceRead' | 'workspaceWrite'>, profile: SessionProfile, home: string | undefined): string[] {
  if (profile !== 'workspace') return [];
  return [
    '--landlock',
    `--home-cover=${homeToCover(home)}`,
    ...WORKSPACE_SYSTEM_READ.map((path) => `--landlock-read=${path}`),
    // The operator's: the helper follows no symlink on their way (one the user swapped in grants nothing).
    ...session.workspaceRead.map((path) => `--landlock-read-exact=${path}`),
    ...[...WORKSPACE_PRIVATE_WRITE, ...session.workspaceWrite].map((path) => `--landlock-write=${path}`),
  ];
}

/** The workspace unit's mount plan (unit-properties.ts): what PID 1 leaves writable in place, what it binds back into the covered home, the home it covers. */
export interface WorkspaceMounts {
  /** ReadWritePaths=: the workspace when outside the home, and the operator's write paths outside it. */
  writablePaths: string[];
  /** BindPaths= onto themselves: the workspace when under the home (the helper checks it is the START's
   * directory) and the operator's write paths there that root found (workspace-look.ts homeBinds). */
  boundPaths: string[];
  /** BindReadOnlyPaths= onto themselves: the operator's read paths under the home that root found. */
  readOnlyBinds: string[];
  /** TemporaryFileSystem=<home>:ro: the home's path sockets (an ssh ControlMaster's, gpg's) are not there. */
  homeCover?: string;
}

/**
 * What PID 1 does to the mount tree under the workspace profile. The home is covered: Landlock's read
 * allowlist never grants it, but it has no right for connect(), so a path socket under it stayed
 * reachable while the home was only read-only. Bound back: the workspace, and the operator's paths under
 * the home that root found as directories without a symlink on their way (`binds`); PID 1 resolves each
 * by path again, through whatever the user put there since, so the helper checks every bind is the
 * directory root saw (native/session/mounts.c). The operator's other paths under the home grant nothing.
 */
export function workspaceMounts(session: Pick<SessionConfig, 'workspaceWrite'>, profile: SessionProfile, workspacePath: string, home: string | undefined, binds: readonly { path: string; writable: boolean }[] = []): WorkspaceMounts {
  if (profile !== 'workspace') return { writablePaths: [], boundPaths: [], readOnlyBinds: [] };
  // PID 1 makes the workspace writable by this path (ReadWritePaths=, BindPaths=): what a unit file
  // cannot carry is refused. The helper's `--cwd-path` needs less (an argument: cwd-plan.ts).
  if (!UNIT_PATH.test(workspacePath)) {
    throw new SessionError(ErrorCode.BAD_START, `workspace refused: the working directory's path cannot be made writable by systemd (no whitespace, quotes, ':' or '\\'): ${JSON.stringify(workspacePath)}`);
  }
  const homeCover = homeToCover(home);
  const underHome = below(workspacePath, homeCover);
  const inHome = binds.filter((bind) => below(bind.path, homeCover));
  return {
    writablePaths: [...(underHome ? [] : [workspacePath]), ...session.workspaceWrite.filter((path) => path !== homeCover && !below(path, homeCover))],
    boundPaths: [...(underHome ? [workspacePath] : []), ...inHome.filter((bind) => bind.writable).map((bind) => bind.path)],
    readOnlyBinds: inHome.filter((bind) => !bind.writable).map((bind) => bind.path),
    homeCover,
  };
}

/** The session helper's bound on Landlock paths (native/session/landlock.h MAX_LANDLOCK_PATHS). */
export const HELPER_MAX_LANDLOCK_PATHS = 96;
