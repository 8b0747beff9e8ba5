// Finds the session helper executable: beside a bundle in dist/, or in build/Release of a checkout.
import { accessSync, constants } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HELPER_NAME = 'opencode-pty-session';

export class HelperPathError extends Error {
  override name = 'HelperPathError';
  /** The only reason there is: no executable helper at any of the places looked. */
  readonly code = 'HELPER_NOT_FOUND';
  readonly candidates: readonly string[];

  constructor(candidates: string[]) {
    super(`session helper ${HELPER_NAME} not found or not executable (looked in ${candidates.join(', ')}); run npm ci`);
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

/** The absolute path of the helper; `from` is the directory of the running module (for tests). */
export function helperPath(from: string = dirname(fileURLToPath(import.meta.url))): string {
  const candidates = [
    // A bundle in dist/ carries the helper beside it.
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
