// The opencode-ptyctl command as a function: parses the command line and runs it; all diagnostics go
// to stderr. What `run` does not need is loaded when asked for: the operator commands (install,
// status, ...; a bundle of their own, dist/cli-operate.cjs) and `ls`/`attach`.
import { USAGE, USAGE_EXIT, parseCommandLine } from './run-args.ts';
import { runCommand } from './run.ts';
import { packageVersion } from '../version.ts';

export { warmUp as warmUpForCodeCache } from './warm-up.ts';

/** Operator commands by name, and their usage; each lives in its own module with its own --help. */
export const OPERATOR_NAMES: ReadonlySet<string> = new Set(['install', 'uninstall', 'stop', 'status', 'verify']);

async function operatorUsage(): Promise<string> {
  return (await import('./operate.ts')).OPERATOR_USAGE;
}

export async function main(args: string[]): Promise<number> {
  if (OPERATOR_NAMES.has(args[0] ?? '')) {
    const { OPERATOR_COMMANDS, defaultContext } = await import('./operate.ts');
    return OPERATOR_COMMANDS[args[0]!]!(args.slice(1), defaultContext());
  }
  const command = parseCommandLine(args, process.env);
  const stdio = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
  switch (command.kind) {
    case 'help':
      process.stdout.write(`${USAGE}\n${await operatorUsage()}`);
      return 0;
    case 'version':
      process.stdout.write(`opencode-ptyctl ${packageVersion()}\n`);
      return 0;
    case 'usage':
      process.stderr.write(`opencode-ptyctl: ${command.message}\n\n${USAGE}\n${await operatorUsage()}`);
      return USAGE_EXIT;
    case 'run':
      return runCommand(command, stdio);
    case 'ls':
      return (await import('./attach.ts')).runList(command, stdio);
    case 'attach':
      return (await import('./attach.ts')).runAttach(command, stdio);
  }
}

/** Runs the command with this process's arguments and exits with its status. */
export function run(): void {
  void main(process.argv.slice(2)).then((status) => {
    // Exit explicitly (stdin may still hold the loop open), once what was written to stdout has been handed over.
    process.stdout.write('', () => process.exit(status));
  });
}
