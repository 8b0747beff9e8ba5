// opencode-ptyctl status: the socket, the broker and every live session, for people or (--json) scripts.
import { existsSync } from 'node:fs';
import { checkAgentGroups, DEFAULT_LAYOUT, formatStatus, gatherStatus, localAccounts, paths, readRecord } from '../operate/index.ts';
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
  const layout = prefixLayout(parsed.values.prefix);
  const record = readRecord(layout);
  const json = parsed.flags.has('json');
  if (!record && !json) {
    context.stdout(`not installed (no install record at ${paths.record(layout)}); install with: opencode-ptyctl install --client-user USER --client-unit UNIT\n`);
    return EXIT.DIFFERS;
  }
  const status = gatherStatus(context.run, record?.unitPrefix ?? 'opencode-pty-');
  // A unit or drop-in install wrote and someone removed: systemd may still run it from memory until a reload.
  const missing = record ? Object.keys(record.files).filter((path) => !existsSync(path)) : [];
  if (json) context.stdout(`${JSON.stringify({ installed: Boolean(record), version: record?.current ?? null, missing, ...status }, null, 2)}\n`);
  else {
    context.stdout(formatStatus(status));
    for (const path of missing) context.stdout(`missing: ${path} (install wrote it; opencode-ptyctl install restores it)\n`);
    const agent = record ? checkAgentGroups(context.run, record.clientUnit, record.socketGroup, localAccounts().group(record.socketGroup)?.gid) : undefined;
    if (agent) context.stdout(`warning: ${agent}\n`);
  }
  return record && missing.length === 0 ? EXIT.OK : EXIT.DIFFERS;
}
