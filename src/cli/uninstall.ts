// opencode-ptyctl uninstall: ends live sessions and removes exactly what install wrote.
import { applyPlan, DEFAULT_LAYOUT, existingState, planUninstall, readRecord } from '../operate/index.ts';
import type { CommandContext } from './context.ts';
import { EXIT, EXIT_HELP } from './exit-codes.ts';
import { printPlan } from './install.ts';
import { commandOptions, prefixLayout } from './options.ts';

export const UNINSTALL_USAGE = `Usage: opencode-ptyctl uninstall [--purge] [--prefix DIR] [--dry-run]

Stops the socket, ends every live session (each unit is stopped and waited for; its client sees the
program end), stops the broker, disables the socket and removes exactly the files, directories and
group the install record lists, then reloads systemd. The config is kept unless --purge.

  --purge        also remove ${DEFAULT_LAYOUT.configDir}/config.json and its README
  --prefix DIR   the install's directory (default: ${DEFAULT_LAYOUT.libDir})
  --dry-run      print every file and command it would touch, change nothing
  -h, --help     show this help

${EXIT_HELP}`;

export function runUninstall(args: readonly string[], context: CommandContext): number {
  const parsed = commandOptions('uninstall', UNINSTALL_USAGE, args, { values: ['prefix'], flags: ['dry-run', 'purge'] }, context);
  if (typeof parsed === 'number') return parsed;
  const layout = prefixLayout(parsed.values.prefix);
  const record = readRecord(layout);
  const plan = planUninstall({ layout, purge: parsed.flags.has('purge') }, record, existingState(context.run, layout, record?.unitPrefix ?? 'opencode-pty-'), process.geteuid?.() ?? -1);
  if (plan.refusals.length) {
    for (const refusal of plan.refusals) context.stderr(`opencode-ptyctl uninstall: refused: ${refusal}\n`);
    return record ? EXIT.REFUSED : EXIT.DIFFERS;
  }
  if (parsed.flags.has('dry-run')) {
    printPlan(plan, context.stdout);
    return EXIT.OK;
  }
  try {
    applyPlan(plan, context.run, (line) => context.stdout(`done: ${line}\n`));
  } catch (error) {
    context.stderr(`opencode-ptyctl uninstall: failed: ${(error as Error).message}\n`);
    return EXIT.FAILED;
  }
  for (const note of plan.notes) context.stdout(`note: ${note}\n`);
  context.stdout('opencode-ptyctl uninstall: removed\n');
  return EXIT.OK;
}
