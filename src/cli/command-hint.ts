// How to name this command in the next steps an operator is told: `opencode-ptyctl` only when that
// name on PATH is this very program (npm install -g links it there); from a checkout it is on no PATH,
// and another copy on PATH (an older global install) would check against another build.
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export const COMMAND = 'opencode-ptyctl';

/** The real path of the first executable `name` in a PATH string, or undefined. */
export function findOnPath(name: string, pathEnv: string | undefined): string | undefined {
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    if (!dir.startsWith('/')) continue; // a relative PATH entry names nothing we could tell an operator
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return realpathSync(candidate);
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface CommandHint {
  /** What to type for this program: `opencode-ptyctl`, or the Node and the script's absolute path. */
  command: string;
  /** Why the name alone would not do, when it would not. */
  note?: string;
}

/**
 * `thisCli`: the real path of the running cli.js; `onPath`: what `opencode-ptyctl` on PATH resolves to;
 * `installed`: the installed copy's cli.js (root-owned, outlives a checkout) and the Node the unit runs.
 */
export function commandHint(thisCli: string, onPath: string | undefined, installed: { node: string; cli: string }): CommandHint {
  if (onPath === thisCli) return { command: COMMAND };
  const command = `${installed.node} ${installed.cli}`;
  return onPath === undefined
    ? { command, note: `${COMMAND} is not on PATH (installed from a checkout, or npm's bin is not on PATH): run the installed copy as ${command}` }
    : { command, note: `${COMMAND} on PATH is another copy (${onPath}): run the installed copy as ${command}, or npm install -g this version` };
}

export function realCli(bundleDir: string): string {
  try {
    return realpathSync(join(bundleDir, 'cli.js'));
  } catch {
    return join(bundleDir, 'cli.js');
  }
}
