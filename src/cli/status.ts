// opencode-ptyctl status: the socket, the broker and every live session, for people or (--json) scripts.
import { existsSync } from 'node:fs';
import { checkAgentGroups, DEFAULT_LAYOUT, formatStatus, gatherStatus, localAccounts, paths, readRecord } from '../operate/index.ts';
import type { CommandContext } from './context.ts';
import { EXIT, EXIT_HELP } from './exit-codes.ts';
import { commandOptions, prefixLayout } from './options.ts';
import { DEFAULT_SOCKET } from '../client/index.ts';
import { brokerRuns, formatKept, gatherKept } from './kept-status.ts';

export const STATUS_USAGE = `Usage: opencode-ptyctl status [--json] [--prefix DIR]

Shows the socket (state, path, mode, group), the broker (state, PID, since, memory, sessions served),
every live session (unit, user, program, cwd, started, CPU time, memory, tasks, as systemd reports
them; "unavailable" where systemd has no figure), the kept sessions as \`ls\` shows them (attached
or detached, retained bytes, keep deadline) and the last warnings and errors from the journal.

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
  // Kept sessions live in the broker's workers: with no broker, none; asking would socket-activate one.
  const kept = brokerRuns(status.broker.state) ? gatherKept(context.run, context.bundleDir, status.socket.path ?? DEFAULT_SOCKET) : { sessions: [] };
  if (json) {
    const keptFields = 'error' in kept ? { kept: null, keptError: kept.error } : { kept: kept.sessions };
    context.stdout(`${JSON.stringify({ installed: Boolean(record), version: record?.current ?? null, missing, ...status, ...keptFields }, null, 2)}\n`);
  } else {
    context.stdout(formatStatus(status));
    context.stdout(formatKept(kept, Date.now()));
    for (const path of missing) context.stdout(`missing: ${path} (install wrote it; opencode-ptyctl install restores it)\n`);
    const agent = record ? checkAgentGroups(context.run, record.clientUnit, record.socketGroup, localAccounts().group(record.socketGroup)?.gid) : undefined;
    if (agent) context.stdout(`warning: ${agent}\n`);
  }
  return record && missing.length === 0 ? EXIT.OK : EXIT.DIFFERS;
}
