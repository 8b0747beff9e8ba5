// What every operator command gets: its output streams, the command runner and where the bundle is.
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand, type CgroupFacts, type Runner } from '../operate/index.ts';

export interface CommandContext {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  run: Runner;
  /** The directory of the built bundle this CLI belongs to (dist/, or an installed version). */
  bundleDir: string;
  /** The host's cgroup layout (default: probed); tests pass each layout in. */
  cgroups?: () => CgroupFacts;
  /** The PATH to look the command up in (default: this process's). */
  path?: string;
}

export function defaultContext(): CommandContext {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    run: runCommand,
    // In the bundle this file is a bundle beside cli.js (cli-operate.cjs); from the sources, the built dist/ beside src/.
    bundleDir: import.meta.url.endsWith('.ts') ? fileURLToPath(new URL('../../dist', import.meta.url)) : dirname(fileURLToPath(import.meta.url)),
  };
}
