// Session profiles: what a session unit adds to the defaults (pure). Every session runs as the
// client account, so one session's programs can reach another's as the kernel lets any process of
// a user reach its own others (ptrace, pidfd_getfd, process_vm_*, signals). Interactive work needs
// debuggers, so the default profile keeps that; "hardened" takes it away; "workspace" adds to it a
// Landlock confinement the session helper applies itself (native/session/landlock.c) and hides the
// account's path sockets (docs/security.md).
import type { PropertyTuple } from './unit-limits.ts';

export type SessionProfile = 'default' | 'hardened' | 'workspace';
/** In order: each profile holds everything the one before it does. */
export const SESSION_PROFILES: readonly SessionProfile[] = ['default', 'hardened', 'workspace'];

/** EPERM (errno 1): a denied call fails like a permission error instead of killing the program. */
const EPERM = 1;

/**
 * Calls that reach into another process of the same user, plus groups no interactive session needs
 * (systemd.exec(5) "System Call Filtering"). @debug holds ptrace, pidfd_getfd and perf_event_open;
 * process_vm_readv/writev are named as well.
 */
export const HARDENED_DENIED_CALLS: readonly string[] = [
  '@debug',
  'ptrace',
  'pidfd_getfd',
  'process_vm_readv',
  'process_vm_writev',
  // Not in systemd 252's @debug; they read another process's layout (kcmp, get_robust_list) or move its pages.
  'kcmp',
  'get_robust_list',
  'move_pages',
  '@mount',
  '@module',
  '@reboot',
  '@swap',
  '@raw-io',
  '@clock',
  '@cpu-emulation',
  '@obsolete',
];

/** What a terminal session needs of /dev (systemd.resource-control(5) "DeviceAllow="). */
export const HARDENED_DEVICES: readonly string[] = ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty', '/dev/ptmx', '/dev/pts/ptmx'];

/**
 * Path sockets a workspace session must not reach (Landlock ABI 7 has no right for connect() on a path
 * socket): the container engines' sockets, hidden by PID 1 in the unit's mount namespace (their parents
 * are root's, so the user cannot swap them); /proc/PID/root of a process outside the unit (the way around
 * a mount namespace) is closed by Landlock's ptrace rule. The account's runtime directory (its manager's
 * bus and private socket, gpg and ssh agents, the agent's own sockets) is WORKSPACE_RUNTIME_COVER's.
 */
export const WORKSPACE_HIDDEN_SOCKETS: readonly string[] = ['/run/docker.sock', '/run/containerd', '/run/podman', '/var/run/docker.sock'];

/**
 * /run/user covered by an empty read-only file system. TemporaryFileSystem= rather than
 * InaccessiblePaths=: where PID 1 cannot build a mount namespace it starts the unit without one, and
 * with it without PrivateTmp= and every hidden path, unless the unit asks for something it cannot do
 * without (systemd 252 src/core/execute.c insist_on_sandboxing(): temporary file systems are such).
 * The helper checks the cover is there before its fork (native/session/mounts.c).
 */
export const WORKSPACE_RUNTIME_COVER = '/run/user';

/**
 * The unit's own /dev/shm: the host's is one tmpfs for every process of the account, whose files
 * Landlock keeps unopened but not their metadata (chmod, utimes by path), and without any POSIX shared
 * memory fails (Python's multiprocessing locks). An empty tmpfs of the unit's, bounded (its pages are
 * the unit's memory too), which the helper checks is not the client's before it grants it
 * (native/session/mounts.c mounts_open_shm()). systemd.exec(5) TemporaryFileSystem=: PID 1 mounts it
 * with nodev and these options.
 */
export const WORKSPACE_SHM: readonly [string, string] = ['/dev/shm', 'mode=1777,nosuid,size=256m,nr_inodes=16384'];

export function profileProperties(profile: SessionProfile): PropertyTuple[] {
  if (profile === 'default') return [];
  if (profile === 'hardened') return hardenedProperties();
  return workspaceProperties();
}

/**
 * The mount layer under Landlock: Landlock up to ABI 7 does not govern metadata (chmod, chown, utimes,
 * setxattr by path succeed on any file the user owns), so everything is read-only but /dev, /proc, /sys,
 * the private /tmp and the paths the unit makes writable (ReadWritePaths=: the workspace and the
 * operator's write paths, unit-properties.ts). ProtectSystem=strict leaves /home, /root and /run/user to
 * ProtectHome= (systemd 252 src/core/namespace.c protect_system_strict_table); ProtectHome=read-only's own
 * /run/user entry would outrank the cover below (at one path a read-only entry outranks a temporary file
 * system: drop_duplicates()), so /home and /root are named read-only here instead, which is what
 * ProtectHome=read-only does to them. /run too: measured writable in a strict unit here (the
 * sandbox's /run is a mount of its own). The helper checks the result before its fork: no writable
 * mount but the expected ones (native/session/mounts.c).
 */
function workspaceProperties(): PropertyTuple[] {
  return [
    ...hardenedProperties().filter(([name]) => name !== 'ProtectSystem'),
    ['ProtectSystem', 's', 'strict'],
    ['ReadOnlyPaths', 'as', ['-/home', '-/root', '-/run']],
    ['TemporaryFileSystem', 'a(ss)', [[WORKSPACE_RUNTIME_COVER, 'ro'], [...WORKSPACE_SHM]]],
  ];
}

function hardenedProperties(): PropertyTuple[] {
  return [
    ['NoNewPrivileges', 'b', true],
    ['SystemCallFilter', '(bas)', [false, [...HARDENED_DENIED_CALLS]]],
    ['SystemCallErrorNumber', 'i', EPERM],
    // A filter for the native ABI only could be sidestepped through another one (x32, i386).
    ['SystemCallArchitectures', 'as', ['native']],
    ['RestrictSUIDSGID', 'b', true],
    ['LockPersonality', 'b', true],
    ['RestrictRealtime', 'b', true],
    ['ProtectKernelTunables', 'b', true],
    ['ProtectKernelModules', 'b', true],
    ['ProtectKernelLogs', 'b', true],
    ['ProtectControlGroups', 'b', true],
    ['ProtectClock', 'b', true],
    ['ProtectHostname', 'b', true],
    // A /tmp of its own, so programs see no other session's files there by path. It is still
    // reachable through /proc/PID/root of a process of the account (a kernel rule by uid).
    ['PrivateTmp', 'b', true],
    ['ProtectSystem', 's', 'full'],
    ['CapabilityBoundingSet', 't', 0n],
    // Other accounts' processes are hidden; the session's own account stays visible (hidepid=).
    ['ProtectProc', 's', 'invisible'],
    // No new namespaces of any kind (the mask of allowed ones, empty: systemd.exec(5)).
    ['RestrictNamespaces', 't', 0n],
    ['RestrictAddressFamilies', '(bas)', [true, ['AF_UNIX', 'AF_INET', 'AF_INET6', 'AF_NETLINK']]],
    ['UMask', 'u', 0o077],
    // Devices by allowlist: the terminal's own slave is opened through its master (TIOCGPTPEER),
    // so no pts needs opening by name, and another session's /dev/pts/N (the same account's node)
    // is out of reach, by path or through /proc/PID/fd.
    ['DevicePolicy', 's', 'strict'],
    ['DeviceAllow', 'a(ss)', HARDENED_DEVICES.map((device): [string, string] => [device, 'rw'])],
  ];
}
