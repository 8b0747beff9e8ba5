// opencode-ptyctl install: checks the host, then installs or upgrades the supervisor (see the plan).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyPlan, type Bundle, probeCgroups, DEFAULT_CLIENT_UNIT, DEFAULT_LAYOUT, DEFAULT_SOCKET_GROUP, describeStep, dirChain, existingState, hostFacts, type Layout, localAccounts, parseManifest, packageDirProblems, paths, type Plan, planInstall, readRecord } from '../operate/index.ts';
import { COMMAND, commandHint, findOnPath, realCli } from './command-hint.ts';
import type { CommandContext } from './context.ts';
import { EXIT, EXIT_HELP } from './exit-codes.ts';
import { parseOptions } from './options.ts';

export const INSTALL_USAGE = `Usage: opencode-ptyctl install [--client-user USER] [--client-group GROUP] [--client-unit UNIT]
                            [--socket-group GROUP] [--prefix DIR] [--node PATH] [--dry-run]

Installs (or upgrades) the supervisor from the bundle this command belongs to. Run as root on a host
where systemd (252 or newer) is PID 1. A second run with nothing new changes nothing and says so.
An upgrade (the new package's command, run with no options) keeps the installed account, unit and group.

  --client-user USER    the account the agent service runs as (sessions run as it; not root);
                        required on a first install
  --client-group GROUP  its group (default: USER's primary group; not gid 0)
  --client-unit UNIT    the agent's service unit (default: ${DEFAULT_CLIENT_UNIT}); it gets a drop-in
                        with SupplementaryGroups= for the socket group
  --socket-group GROUP  the socket's group (default: ${DEFAULT_SOCKET_GROUP}); created with groupadd --system
                        when missing; USER must not be a member of it in /etc/group
  --prefix DIR          where versioned bundles go (default: ${DEFAULT_LAYOUT.libDir})
  --node PATH           the Node (20 or newer, root-owned) written into the unit (default: this one)
  --dry-run             print every file and command it would touch, change nothing
  -h, --help            show this help

${EXIT_HELP}`;

export function loadBundle(dir: string): Bundle {
  const manifestText = readFileSync(join(dir, 'manifest.json'), 'utf8');
  return {
    dir,
    manifest: parseManifest(manifestText),
    manifestText,
    socketTemplate: readFileSync(join(dir, 'units/supervisor.socket'), 'utf8'),
    serviceTemplate: readFileSync(join(dir, 'units/supervisor@.service'), 'utf8'),
  };
}

/** The unit prefix of an existing config (a reinstall must find its sessions), else the default. */
function configuredPrefix(layout: Layout): string {
  try {
    const prefix = (JSON.parse(readFileSync(paths.config(layout), 'utf8')) as { unitPrefix?: unknown }).unitPrefix;
    return typeof prefix === 'string' ? prefix : 'opencode-pty-';
  } catch {
    return 'opencode-pty-';
  }
}

/** The account an earlier install's config names (records written before they kept it lack it). */
function configuredClientUser(layout: Layout): string | undefined {
  try {
    const user = (JSON.parse(readFileSync(paths.config(layout), 'utf8')) as { client?: { user?: unknown } }).client?.user;
    return typeof user === 'string' ? user : undefined;
  } catch {
    return undefined;
  }
}

export function printPlan(plan: Plan, say: (text: string) => void): void {
  for (const { step, change } of plan.steps) say(`${change ? 'would' : 'unchanged'}: ${describeStep(step)}\n`);
  for (const note of plan.notes) say(`note: ${note}\n`);
  printWarnings(plan, say);
}

function printWarnings(plan: Plan, say: (text: string) => void): void {
  for (const warning of plan.warnings ?? []) say(`warning: ${warning}\n`);
}

export function runInstall(args: readonly string[], context: CommandContext): number {
  const parsed = parseOptions(args, { values: ['client-user', 'client-group', 'client-unit', 'socket-group', 'prefix', 'node'], flags: ['dry-run'] });
  if ('help' in parsed) {
    context.stdout(INSTALL_USAGE);
    return EXIT.OK;
  }
  if ('error' in parsed || parsed.positionals.length) {
    context.stderr(`opencode-ptyctl install: ${'error' in parsed ? parsed.error : `unexpected argument ${parsed.positionals[0]}`}\n\n${INSTALL_USAGE}`);
    return EXIT.USAGE;
  }
  const { values, flags } = parsed;
  if (values.prefix && !values.prefix.startsWith('/')) {
    context.stderr('opencode-ptyctl install: --prefix must be an absolute path\n');
    return EXIT.USAGE;
  }
  const layout: Layout = { ...DEFAULT_LAYOUT, libDir: values.prefix?.replace(/\/+$/, '') ?? DEFAULT_LAYOUT.libDir };
  // An upgrade (`npm i -g …@NEW && opencode-ptyctl install`) takes the account, unit and group from the install it upgrades.
  const earlier = readRecord(layout);
  const clientUser = values['client-user'] ?? earlier?.clientUser ?? (earlier ? configuredClientUser(layout) : undefined);
  if (!clientUser) {
    context.stderr(`opencode-ptyctl install: --client-user is required (no earlier install at ${layout.libDir} to take it from)\n\n${INSTALL_USAGE}`);
    return EXIT.USAGE;
  }
  let bundle: Bundle;
  try {
    bundle = loadBundle(context.bundleDir);
  } catch (error) {
    context.stderr(`opencode-ptyctl install: no built bundle at ${context.bundleDir} (${(error as Error).message}); run node build.mjs and use dist/cli.js\n`);
    return EXIT.FAILED;
  }
  const unitPrefix = configuredPrefix(layout);
  const nodePath = values.node ?? process.execPath;
  const plan = planInstall(
    {
      clientUser,
      clientGroup: values['client-group'],
      clientUnit: values['client-unit'] ?? earlier?.clientUnit ?? DEFAULT_CLIENT_UNIT,
      socketGroup: values['socket-group'] ?? earlier?.socketGroup ?? DEFAULT_SOCKET_GROUP,
      layout,
      unitPrefix,
    },
    bundle,
    hostFacts(context.run, nodePath, context.cgroups?.() ?? probeCgroups()),
    localAccounts(),
    existingState(context.run, layout, unitPrefix),
  );
  // Root copies from this directory into its own: nobody else may be able to change it meanwhile.
  const refusals = [...plan.refusals, ...(process.geteuid?.() === 0 ? packageDirProblems(dirChain(context.bundleDir)) : [])];
  if (refusals.length) {
    for (const refusal of refusals) context.stderr(`opencode-ptyctl install: refused: ${refusal}\n`);
    return EXIT.REFUSED;
  }
  if (flags.has('dry-run')) {
    printPlan(plan, context.stdout);
    return EXIT.OK;
  }
  if (!plan.steps.some((s) => s.change)) {
    context.stdout(`opencode-ptyctl install: already installed, nothing changed (${bundle.manifest.version} in ${layout.libDir})\n`);
    for (const note of plan.notes) context.stdout(`note: ${note}\n`);
    printWarnings(plan, context.stdout);
    return EXIT.OK;
  }
  // The next steps name a command that runs this build: the one on PATH only if it is this program.
  const hint = commandHint(realCli(context.bundleDir), findOnPath(COMMAND, context.path ?? process.env.PATH), { node: nodePath, cli: `${paths.current(layout)}/cli.js` });
  const prefix = layout.libDir === DEFAULT_LAYOUT.libDir ? '' : ` --prefix ${layout.libDir}`;
  try {
    applyPlan(plan, context.run, (line) => context.stdout(`done: ${line}\n`));
  } catch (error) {
    context.stderr(`opencode-ptyctl install: failed: ${(error as Error).message}\n(what was done is listed above; this install command again resumes, \`${hint.command} uninstall${prefix}\` removes it)\n`);
    return EXIT.FAILED;
  }
  for (const note of plan.notes) context.stdout(`note: ${note}\n`);
  if (hint.note) context.stdout(`note: ${hint.note}\n`);
  printWarnings(plan, context.stdout);
  context.stdout(`opencode-ptyctl install: installed ${bundle.manifest.version}. Check it with: ${hint.command} verify${prefix} && ${hint.command} status${prefix}\n`);
  return EXIT.OK;
}
