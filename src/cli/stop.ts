// opencode-ptyctl stop: ends live sessions from the operator's side by stopping their units.
import { DEFAULT_LAYOUT, liveSessions, readRecord } from '../operate/index.ts';
import type { CommandContext } from './context.ts';
import { EXIT, EXIT_HELP } from './exit-codes.ts';
import { parseOptions } from './options.ts';

export const STOP_USAGE = `Usage: opencode-ptyctl stop UNIT... | --all

Ends the named live sessions (or every one): systemd stops each unit (SIGTERM and SIGHUP to its
processes, SIGKILL after the session's stop timeout) and this waits until they are gone. The client
sees the program end: EXIT with the status of the signal (a shell killed by SIGHUP: 129), as after
any stop of the unit (docs/operations.md, "Ending a session").

  --all        every live session
  -h, --help   show this help

${EXIT_HELP}`;

export function runStop(args: readonly string[], context: CommandContext): number {
  const parsed = parseOptions(args, { values: [], flags: ['all'] });
  if ('help' in parsed) {
    context.stdout(STOP_USAGE);
    return EXIT.OK;
  }
  const all = !('error' in parsed) && parsed.flags.has('all');
  if ('error' in parsed || all === parsed.positionals.length > 0) {
    context.stderr(`opencode-ptyctl stop: ${'error' in parsed ? parsed.error : all ? 'give UNIT names or --all, not both' : 'name a session UNIT or --all'}\n\n${STOP_USAGE}`);
    return EXIT.USAGE;
  }
  const prefix = readRecord(DEFAULT_LAYOUT)?.unitPrefix ?? 'opencode-pty-';
  const live = liveSessions(context.run, prefix);
  const wanted = all ? live : parsed.positionals;
  const unknown = wanted.filter((unit) => !live.includes(unit));
  if (unknown.length) {
    context.stderr(`opencode-ptyctl stop: no such live session: ${unknown.join(', ')} (live: ${live.join(', ') || 'none'})\n`);
    return EXIT.DIFFERS;
  }
  if (wanted.length === 0) {
    context.stdout('opencode-ptyctl stop: no live session\n');
    return EXIT.OK;
  }
  const result = context.run('systemctl', ['stop', ...wanted]);
  if (result.code !== 0) {
    context.stderr(`opencode-ptyctl stop: systemctl stop failed (${result.code}): ${result.stderr.trim()}\n`);
    return EXIT.FAILED;
  }
  for (const unit of wanted) context.stdout(`stopped ${unit}\n`);
  return EXIT.OK;
}
