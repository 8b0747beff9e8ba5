// Closing descriptors on paths where a failure has nothing left to tell: already closed or never valid.
import { closeSync } from 'node:fs';
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
 * Closes descriptors a peer sent, so that no close can hold this thread (native/received-close.cc): a
 * pipe, an anonymous inode or a file on one of our non-FUSE mounts at once; a socket (a Unix one's last
 * close frees its own queue here; a TCP one's linger can be armed again by a sender that kept a copy)
 * or a file on FUSE or a mount we cannot see (close(2) sends FLUSH) on the close pool. Its threads are
 * bounded per process; while one is held, the process is not clean (pendingCloses).
 */
export function closeReceived(fds: readonly number[]): void {
  if (fds.length > 0) native().closeReceived([...fds]);
}
