// Finds the session helper executable: beside a bundle in dist/, or in build/Release of a checkout.
import { accessSync, constants, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noPrebuiltMessage, platformName } from '../native/index.ts';

export const HELPER_NAME = 'opencode-pty-session';

export class HelperPathError extends Error {
  override name = 'HelperPathError';
  /** The only reason there is: no executable helper at any of the places looked. */
  readonly code = 'HELPER_NOT_FOUND';
  readonly candidates: readonly string[];

  constructor(candidates: string[]) {
    super(`session helper ${HELPER_NAME} not found or not executable: ${noPrebuiltMessage('session helper', platformName(), candidates)}`);
    this.candidates = candidates;
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why the helper at `path` may not run sessions, or undefined when it may (pure but for one stat).
 * It must be root-owned and neither readable nor writable by anyone else: the kernel then makes it
 * non-dumpable from exec on, so no process of the client account can take its fds (the client
 * socket) in the moment before its own prctl(PR_SET_DUMPABLE, 0). With the helper readable a
 * same-account process racing pidfd_getfd took the socket from 3 of 20 helpers.
 */
export function unsafeHelper(path: string): string | undefined {
  const stat = statSync(path, { throwIfNoEntry: false });
  // Absent from this process's view (a test worker outside the sandbox its units run in): systemd
  // then decides, and fails the start if it is absent for the unit too.
  if (!stat) return undefined;
  if (!stat.isFile()) return `${path} is not a file`;
  if (stat.uid !== 0) return `${path} is owned by uid ${stat.uid}, not root`;
  if ((stat.mode & 0o066) !== 0) return `${path} has mode ${(stat.mode & 0o7777).toString(8)}: group and others must not read or write it (install it 0711)`;
  return undefined;
}

/** The absolute path of the helper; `from` is the directory of the running module (for tests). */
export function helperPath(from: string = dirname(fileURLToPath(import.meta.url))): string {
  const candidates = [
    // A bundle in dist/ carries the helper for each platform in dist/<platform>/ (build.mjs).
    join(from, platformName(), HELPER_NAME),
    // …or beside it (a bundle copied with its helper, as tests do).
    join(from, HELPER_NAME),
    // This file in a checkout: src/worker/ → build/Release/.
    join(from, '..', '..', 'build', 'Release', HELPER_NAME),
    // A bundle in dist/ of a checkout that was built but not packed.
    join(from, '..', 'build', 'Release', HELPER_NAME),
  ];
  const found = candidates.find(isExecutable);
  if (!found) throw new HelperPathError(candidates);
  return found;
}
