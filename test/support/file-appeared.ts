// Waiting for a file another process creates (a socket, a ready marker): by its directory's change
// events, never by polling.
import { once } from 'node:events';
import { existsSync, watch } from 'node:fs';
import { dirname } from 'node:path';

/** Resolves once `path` exists; rejects (AbortError) after `timeoutMs`. */
export async function appeared(path: string, timeoutMs: number): Promise<void> {
  const watcher = watch(dirname(path));
  try {
    const deadline = AbortSignal.timeout(timeoutMs);
    while (!existsSync(path)) await once(watcher, 'change', { signal: deadline });
  } finally {
    watcher.close();
  }
}
