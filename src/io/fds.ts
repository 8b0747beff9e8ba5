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

/**
 * Whether closing `fd` is known to return at once, from /proc alone (no file system is asked): a
 * socket, pipe or anonymous inode, or a file on a mount of ours whose type is not FUSE. A file on
 * FUSE, or on a mount we cannot see (another mount namespace), may not be.
 */
function closesAtOnce(fd: number): boolean {
  const target = readlinkSync(`/proc/self/fd/${fd}`);
  if (/^(socket|pipe|anon_inode):/.test(target)) return true;
  const mountId = /^mnt_id:\s*(\d+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const fields = line.split(' ');
    if (fields[0] !== mountId) continue;
    // After the optional fields, " - " precedes the file system type (proc(5) "mountinfo").
    return !fields[fields.indexOf('-') + 1]?.startsWith('fuse');
  }
  return false;
}

/**
 * Closes descriptors a peer sent. Sockets arrive with SO_LINGER disarmed (the addon's recvmsg), so
 * their close cannot wait; a file on FUSE could (a FLUSH never answered), so anything not known to
 * close at once is closed on a thread of its own and can hold only that thread, never the event loop.
 */
export function closeReceived(fds: readonly number[]): void {
  for (const fd of fds) {
    let atOnce: boolean;
    try {
      atOnce = closesAtOnce(fd);
    } catch {
      atOnce = true; // not an open fd of ours (EBADF): nothing can block
    }
    if (atOnce) closeQuietly(fd);
    else native().closeDetached(fd);
  }
}
