// Closing descriptors on paths where a failure has nothing left to tell: already closed or never valid.
import { closeSync, readFileSync } from 'node:fs';
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

/** The file system type of the mount `fd` lives on, from /proc alone (the file system is not asked). */
function mountType(fd: number): string | undefined {
  const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
  const mountId = /^mnt_id:\s*(\d+)$/m.exec(info)?.[1];
  if (mountId === undefined) return undefined;
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const fields = line.split(' ');
    if (fields[0] !== mountId) continue;
    // After the optional fields, " - " precedes the file system type (proc(5) "mountinfo").
    return fields[fields.indexOf('-') + 1];
  }
  return undefined;
}

/**
 * Closes descriptors a peer sent. Sockets arrive with SO_LINGER disarmed (the addon's recvmsg), so
 * their close cannot wait; a file on FUSE could (FLUSH never answered), so it is closed on a thread
 * of its own and can hold only that thread, never the event loop.
 */
export function closeReceived(fds: readonly number[]): void {
  for (const fd of fds) {
    let type: string | undefined;
    try {
      type = mountType(fd);
    } catch {
      type = undefined;
    }
    if (type?.startsWith('fuse')) native().closeDetached(fd);
    else closeQuietly(fd);
  }
}
