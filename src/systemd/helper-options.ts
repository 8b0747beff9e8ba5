// What a session unit's helper must be told for its profile (pure), read from the helper's own options
// only: its arguments before ROWS. native/session/main.c reads `--` options up to the first argument
// that is not one (ROWS), and ROWS, COLS and the client's argv follow; a client's `--landlock` or
// `--cwd-path=/` in its argv is the program's argument and grants or proves nothing here.
import { SystemdError } from './errors.ts';
import type { SessionProfile } from './session-profile.ts';

/** The helper's options in `helperArgs`: those before the first argument not starting with `--`. The
 * worker writes each as one `--name=value` argument (the helper's `--name value` form is never used). */
export function helperOptions(helperArgs: readonly string[]): string[] {
  const end = helperArgs.findIndex((arg) => !arg.startsWith('--'));
  return helperArgs.slice(0, end < 0 ? helperArgs.length : end);
}

/** A warm unit's helper is told `--warm` alone: its session's options come with LAUNCH, checked there. */
export function isWarmHelper(helperArgs: readonly string[]): boolean {
  return helperArgs.length === 1 && helperArgs[0] === '--warm';
}

/**
 * Throws PROPERTY_INVALID unless the helper's options carry what `profile` needs: under a profile whose
 * unit has a mount namespace of its own (hardened, workspace), exactly one absolute `--cwd-path`, so the
 * helper enters the working directory there and `..` walks the unit's tree, not the client's
 * (native/session/cwd.c); under workspace also `--landlock`, its confinement.
 */
export function checkHelperOptions(profile: SessionProfile, helperArgs: readonly string[]): void {
  if (profile === 'default') return;
  const options = helperOptions(helperArgs);
  if (profile === 'workspace' && !options.includes('--landlock')) {
    throw new SystemdError('PROPERTY_INVALID', 'the workspace profile needs the helper\'s Landlock arguments among its options');
  }
  const cwdPaths = options.filter((option) => option.startsWith('--cwd-path='));
  if (cwdPaths.length !== 1 || !cwdPaths[0]!.startsWith('--cwd-path=/')) {
    throw new SystemdError('PROPERTY_INVALID', `the ${profile} profile needs the helper's --cwd-path (one, absolute) among its options`);
  }
}
