// opencode-ptyctl verify: is what is installed exactly what the build shipped, on a supported Node?
import { readlinkSync } from 'node:fs';
import { checkSessionProperty, loadConfig, type BudgetLimits } from '../config/index.ts';
import { budgetReport, checkAgentGroups, DEFAULT_LAYOUT, landlockReport, probeCgroups, fileFacts, listFiles, localAccounts, nodeFacts, paths, readManifestAt, readRecord, SESSIONS_SLICE, sessionLimitReport, verifyDifferences } from '../operate/index.ts';
import type { CommandContext } from './context.ts';
import { EXIT, EXIT_HELP } from './exit-codes.ts';
import { platformName } from '../native/index.ts';
import { commandOptions, prefixLayout } from './options.ts';

export const VERIFY_USAGE = `Usage: opencode-ptyctl verify [--prefix DIR] [--manifest DIR]

Compares the installed bundle with the build's manifest (sha256, owner root, mode of every file), the
units, drop-ins and README with what install wrote, validates the config, and checks the unit's Node
and this one against the supported range. Prints every difference; silent about nothing. Says which
per-session budgets (run --max-memory, --max-tasks, --max-cpu) this host enforces: the others are refused.

  --prefix DIR     the install's directory (default: ${DEFAULT_LAYOUT.libDir})
  --manifest DIR   a build directory whose manifest.json to hold the install against (default: the
                   bundle this command belongs to)
  -h, --help       show this help

${EXIT_HELP}`;

export function runVerify(args: readonly string[], context: CommandContext): number {
  const parsed = commandOptions('verify', VERIFY_USAGE, args, { values: ['prefix', 'manifest'], flags: [] }, context);
  if (typeof parsed === 'number') return parsed;
  const layout = prefixLayout(parsed.values.prefix);
  const record = readRecord(layout);
  const manifestDir = parsed.values.manifest ?? context.bundleDir;
  let expected;
  try {
    expected = readManifestAt(manifestDir);
  } catch (error) {
    context.stderr(`opencode-ptyctl verify: cannot read the build manifest in ${manifestDir}: ${(error as Error).message}\n`);
    return EXIT.FAILED;
  }
  let currentLink: string | undefined;
  try {
    currentLink = readlinkSync(paths.current(layout));
  } catch {
    currentLink = undefined;
  }
  let configProblem: string | undefined;
  let sessionSlice: string | undefined;
  let sessionProperties: string[] = [];
  let sessionBudgets: BudgetLimits | undefined;
  let profile = 'default';
  try {
    const { session } = loadConfig({ path: paths.config(layout), checkProperty: checkSessionProperty });
    profile = session.minProfile;
    sessionSlice = session.slice;
    sessionBudgets = session.budgets;
    sessionProperties = Object.keys(session.properties);
  } catch (error) {
    configProblem = (error as Error).message;
  }
  const differences = verifyDifferences(layout, {
    record,
    currentLink,
    expected,
    file: fileFacts,
    listed: record ? listFiles(paths.version(layout, record.current)) : [],
    unitNode: nodeFacts(record?.nodePath ?? process.execPath),
    runningNode: process.version,
    configProblem,
  });
  // Not a difference of the files: the running agent's state, said whatever the files are.
  const agent = record ? checkAgentGroups(context.run, record.clientUnit, record.socketGroup, localAccounts().group(record.socketGroup)?.gid) : undefined;
  if (agent) context.stdout(`warning: ${agent}\n`);
  // Said after the verdict (the files may match, the limits still not hold).
  const cgroups = record ? (context.cgroups?.() ?? probeCgroups()) : undefined;
  const limits = cgroups ? sessionLimitReport(cgroups, sessionSlice ?? SESSIONS_SLICE, sessionProperties) : {};
  // What a START's budgets can be here: said whatever the files are.
  const budgets = cgroups ? budgetReport(cgroups, sessionBudgets) : undefined;
  // The installed helper answers for this kernel: what the workspace profile's sessions would meet.
  const helper = record ? `${paths.version(layout, record.current)}/${platformName()}/opencode-pty-session` : undefined;
  const asked = helper ? context.run(helper, ['--landlock-abi']) : undefined;
  const landlock = landlockReport(profile, asked?.code === 0 ? asked.stdout : undefined);
  const sayLimits = () => {
    for (const report of [limits, landlock]) {
      if (report.note) context.stdout(`note: ${report.note}\n`);
      if (report.warning) context.stdout(`warning: ${report.warning}\n`);
    }
    if (budgets) context.stdout(`note: ${budgets.note}\n`);
    if (budgets?.warning) context.stdout(`warning: ${budgets.warning}\n`);
  };
  if (differences.length) {
    for (const difference of differences) context.stdout(`differs: ${difference}\n`);
    sayLimits();
    return EXIT.DIFFERS;
  }
  context.stdout(`ok: ${Object.keys(expected.artifacts).length} files of ${expected.name} ${expected.version} (sources ${expected.sources.slice(0, 12)}) match; Node ${process.version} satisfies ${expected.node}\n`);
  sayLimits();
  return EXIT.OK;
}
