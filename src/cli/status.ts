// opencode-ptyctl status: the socket, the broker and every live session, for people or (--json) scripts.
import { DEFAULT_LAYOUT, formatStatus, gatherStatus, readRecord } from '../operate/index.ts';
import type { CommandContext } from './context.ts';
import { EXIT, EXIT_HELP } from './exit-codes.ts';
import { commandOptions, prefixLayout } from './options.ts';

export const STATUS_USAGE = `Usage: opencode-ptyctl status [--json] [--prefix DIR]

Shows the socket (state, path, mode, group), the broker (state, PID, since, memory, sessions served),
every live session (unit, user, program, cwd, started, CPU time, memory, tasks, as systemd reports
them; "unavailable" where systemd has no figure) and the last warnings and errors from the journal.

  --json         one JSON object instead (figures as decimal strings, null when unavailable)
  --prefix DIR   the install's directory (default: ${DEFAULT_LAYOUT.libDir})
  -h, --help     show this help

${EXIT_HELP}`;

export function runStatus(args: readonly string[], context: CommandContext): number {
  const parsed = commandOptions('status', STATUS_USAGE, args, { values: ['prefix'], flags: ['json'] }, context);
  if (typeof parsed === 'number') return parsed;
  const record = readRecord(prefixLayout(parsed.values.prefix));
  const status = gatherStatus(context.run, record?.unitPrefix ?? 'opencode-pty-');
  context.stdout(parsed.flags.has('json') ? `${JSON.stringify({ installed: Boolean(record), version: record?.current ?? null, ...status }, null, 2)}\n` : formatStatus(status));
  return record ? EXIT.OK : EXIT.DIFFERS;
}
