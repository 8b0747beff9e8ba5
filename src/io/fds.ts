// Closing descriptors on paths where a failure has nothing left to tell: already closed or never valid.
import { closeSync } from 'node:fs';

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
