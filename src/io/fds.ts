// Closing descriptors on paths where a failure has nothing left to tell: already closed or never valid.
import { closeSync, readFileSync, readlinkSync } from 'node:fs';
import { native } from '../native/binding.ts';

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // EBADF: nothing left to release.
  }
}

export function closeAll(fds: readonly number[]): void {
  for (const fd of fds) closeQuietly(fd);
}

/** File system types by device ("major:minor"), from one read of /proc/self/mountinfo (proc(5) "mountinfo"). */
export function mountTypes(): Map<string, string> {
  const types = new Map<string, string>();
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const fields = line.split(' ');
    // After the optional fields, " - " precedes the file system type.
    const type = fields[fields.indexOf('-') + 1];
    if (fields[2] && type) types.set(fields[2], type);
  }
  return types;
}

/**
 * Whether closing `fd` is known to return at once, from the kernel's cached attributes and /proc alone
 * (no file system is asked): a socket, pipe or anonymous inode, or a file on a device that one of our
 * mounts shows and whose type is not FUSE. A file on FUSE, or on a mount we cannot see (another mount
 * namespace), may not be.
 */
function closesAtOnce(fd: number, mounts: () => Map<string, string>): boolean {
  const stat = native().statCached(fd);
  // A Unix socket's last close frees its own queue in the closing thread, a peer's lingering TCP
  // socket in it included (its linger never disarmed): a thread of its own, as a FUSE file.
  if (stat.unixSocket) return false;
  if (stat.socketOrPipe) return true;
  const type = mounts().get(stat.device);
  if (type !== undefined) return !type.startsWith('fuse');
  // Anonymous inodes (eventfd, epoll, pidfd…) live on no mount of ours.
  return /^anon_inode:/.test(readlinkSync(`/proc/self/fd/${fd}`));
}

/**
 * Closes descriptors a peer sent. Sockets arrive with SO_LINGER disarmed (the addon's recvmsg), so
 * their close cannot wait, except a Unix socket's (what is queued on it is freed by its close); a file on FUSE could (a FLUSH never answered), so anything not known to
 * close at once is closed on a thread of its own and can hold only that thread, never the event loop.
 * Those threads are bounded per process (native/fd-stat.cc): beyond, a descriptor is left open, and
 * the process no longer counts as clean (pendingCloses). The mount table is read once per call,
 * however many descriptors (a message carries up to 253).
 */
export function closeReceived(fds: readonly number[]): void {
  let types: Map<string, string> | undefined;
  const mounts = () => (types ??= mountTypes());
  for (const fd of fds) {
    let atOnce: boolean;
    try {
      atOnce = closesAtOnce(fd, mounts);
    } catch (error) {
      // EBADF: not an open fd of ours, nothing can block. Anything else proves nothing: root's statx of
      // a file on a user's FUSE mount without allow_other fails (EACCES), and its close sends FLUSH.
      atOnce = (error as { code?: string }).code === 'EBADF';
    }
    if (atOnce) closeQuietly(fd);
    else native().closeDetached(fd);
  }
}
