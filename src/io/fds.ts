// Closing descriptors on paths where a failure has nothing left to tell: already closed or never valid.
import { closeSync } from 'node:fs';
import { native } from '../native/index.ts';

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

/** SCM_MAX_FD: what one message carries at most, and what the addon takes at once. */
const MAX_FDS_PER_MESSAGE = 253;

/**
 * Closes descriptors a peer sent, so that no close can hold this thread (native/addon/received-close.cc): a
 * pipe, an anonymous inode or a file on one of our non-FUSE mounts at once; a socket (a Unix one's last
 * close frees its own queue here; a TCP one's linger can be armed again by a sender that kept a copy)
 * or a file on FUSE or a mount we cannot see (close(2) sends FLUSH) on the close pool. Its threads are
 * bounded per process; while one is held, the process is not clean (pendingCloses).
 */
export function closeReceived(fds: readonly number[]): void {
  // The addon takes one message's worth at a time (253, SCM_MAX_FD); a read may have gathered several.
  for (let i = 0; i < fds.length; i += MAX_FDS_PER_MESSAGE) native().closeReceived(fds.slice(i, i + MAX_FDS_PER_MESSAGE));
}
