// The listening socket: systemd's (socket activation), or one made here the careful way when run by hand.
import { chmodSync, chownSync, closeSync, lstatSync, statSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../config/index.ts';
import { native } from '../native/index.ts';

/** sd_listen_fds(3): passed descriptors start at 3. */
const LISTEN_FDS_START = 3;

export class ListenerError extends Error {
  readonly code = 'LISTENER';
}

export interface Listener {
  fd: number;
  fromSystemd: boolean;
}

/** Takes the socket systemd passed, if it passed one to this process; clears LISTEN_* either way. */
export function takeSystemdListener(env: NodeJS.ProcessEnv = process.env): Listener | undefined {
  const forUs = env.LISTEN_PID === String(process.pid);
  const count = Number(env.LISTEN_FDS ?? 0);
  for (const name of ['LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES']) delete env[name];
  if (!forUs || count < 1) return undefined;
  if (count !== 1) throw new ListenerError(`expected one socket from systemd, got ${count}`);
  native().setCloexec(LISTEN_FDS_START);
  native().setNonBlocking(LISTEN_FDS_START, true);
  return { fd: LISTEN_FDS_START, fromSystemd: true };
}

/**
 * The socket systemd passed must be what the config names: the socket unit sets its group and mode
 * (units/supervisor.socket), so a mismatch with the config means the install is wrong. A listener
 * made here (createListener) set both itself.
 */
export function checkSocketPermissions(listener: Listener, config: Pick<Config, 'socketPath' | 'socketGid' | 'socketGroup'>): void {
  if (!listener.fromSystemd) return;
  const stat = statSync(config.socketPath, { throwIfNoEntry: false });
  if (!stat?.isSocket()) throw new ListenerError(`${config.socketPath} is not the socket systemd passed`);
  if (stat.gid !== config.socketGid || (stat.mode & 0o777) !== 0o660) {
    throw new ListenerError(`${config.socketPath} must be mode 0660 with group ${config.socketGroup} (gid ${config.socketGid}); it has gid ${stat.gid} mode ${(stat.mode & 0o777).toString(8)}`);
  }
}

/**
 * Creates the listener at `path` as the earlier supervisor did, but safely: the parent must be a
 * root-owned directory nobody else can write, nothing is followed through a symlink, a non-socket
 * is refused, and a socket is replaced only when nothing answers on it.
 */
export function createListener(path: string, gid: number, backlog = 128): Listener {
  const parent = dirname(path);
  const dir = lstatSync(parent, { throwIfNoEntry: false });
  if (!dir?.isDirectory()) throw new ListenerError(`${parent} is not a directory`);
  if (dir.uid !== 0 || (dir.mode & 0o022) !== 0) throw new ListenerError(`${parent} must be owned by root and writable only by root`);
  const existing = lstatSync(path, { throwIfNoEntry: false });
  if (existing) {
    if (!existing.isSocket()) throw new ListenerError(`refusing to replace ${path}: it is not a socket`);
    if (probeSocket(path) !== 'stale') throw new ListenerError(`another process is listening on ${path}`);
    unlinkSync(path);
  }
  // The mode is set by umask before bind, so the socket is never reachable with a wider mode.
  const previous = process.umask(0o177);
  let fd: number;
  try {
    fd = native().listenUnix(path, backlog);
  } finally {
    process.umask(previous);
  }
  chownSync(path, 0, gid);
  chmodSync(path, 0o660);
  return { fd, fromSystemd: false };
}


/**
 * Whether anyone listens on the socket at `path`. Only ECONNREFUSED proves nobody does (unix(7));
 * EAGAIN means a full backlog, so a live listener, and any other error leaves the socket alone too.
 */
export function probeSocket(path: string, connect: (path: string) => number = (p) => native().connectUnix(p)): 'live' | 'stale' {
  try {
    closeSync(connect(path));
    return 'live';
  } catch (error) {
    return (error as { code?: string }).code === 'ECONNREFUSED' ? 'stale' : 'live';
  }
}
