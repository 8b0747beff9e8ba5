// The opencode-pty command: parses the command line and runs it; all diagnostics go to stderr.
import { USAGE, USAGE_EXIT, parseCommandLine } from './run-args.ts';
import { runCommand } from './run.ts';
import { runAttach, runList } from './attach.ts';
import { packageVersion } from '../version.ts';
import { defaultContext } from './context.ts';
import { OPERATOR_COMMANDS, OPERATOR_USAGE } from './operate.ts';

async function main(args: string[]): Promise<number> {
  const operator = OPERATOR_COMMANDS[args[0] ?? ''];
  if (operator) return operator(args.slice(1), defaultContext());
  const command = parseCommandLine(args, process.env);
  switch (command.kind) {
    case 'help':
      process.stdout.write(`${USAGE}\n${OPERATOR_USAGE}`);
      return 0;
    case 'version':
      process.stdout.write(`opencode-ptyctl ${packageVersion()}\n`);
      return 0;
    case 'usage':
      process.stderr.write(`opencode-ptyctl: ${command.message}\n\n${USAGE}\n${OPERATOR_USAGE}`);
      return USAGE_EXIT;
    case 'run':
      return runCommand(command, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
    case 'ls':
      return runList(command, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
    case 'attach':
      return runAttach(command, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
  }
}

const status = await main(process.argv.slice(2));
// Exit explicitly (stdin may still hold the loop open), once what was written to stdout has been handed over.
process.stdout.write('', () => process.exit(status));
