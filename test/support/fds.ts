// How many fds this process holds, for leak checks: the TypeScript loader's own are left out (it holds
// its cache directory open for a while after loading modules, so a baseline taken then counts one fd
// that is gone by the end; seen under load).
import { readdirSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOADER_CACHE = join(tmpdir(), 'tsx-');

export function openFdCount(): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return !readlinkSync(`/proc/self/fd/${fd}`).startsWith(LOADER_CACHE);
    } catch {
      return false; // the listing's own fd, closed by now
    }
  }).length;
}
