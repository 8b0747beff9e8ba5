// Installs the built supervisor into a sandbox the way a host would have it: the bundle, a config,
// the shipped units (under the project prefix) plus drop-ins, and the socket started.
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../src/config/schema.ts';
import type { Sandbox } from './sandbox.ts';
import { SOCKET_GROUP } from './seed.ts';

export const INSTALL_DIR = '/opt/opencode-pty';
/** The session helper is root-owned and not readable by the client: the kernel then makes it
 * non-dumpable from exec on, so no same-account process can ptrace it or take its fds. */
export const HELPER_MODE = 0o711;
export const CONFIG_PATH = `${INSTALL_DIR}/config.json`;
export const SOCKET_PATH = '/run/opencode-pty/supervisor.sock';
export const SOCKET_UNIT = 'opencode-pty-supervisor.socket';
export const BROKER_UNIT = 'opencode-pty-supervisor@broker.service';
export const AGENT_SERVICE = 'opencode-pty-agent.service';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** What a deployment copies from dist/; this platform's binaries (dist/<platform>-<arch>/) go beside the bundles.
 * Not dist/package.json: test scripts (ES modules named .js) go beside the bundles here, and Node takes
 * cli.js, which has no ES module syntax, for CommonJS without it. */
const PLATFORM = `${process.platform}-${process.arch}`;
const BUNDLE = ['broker.cjs', 'broker-main.cjs', 'broker-main.cjs.cache', 'worker.cjs', 'worker-main.cjs', 'worker-main.cjs.cache', 'cli.js', 'cli-main.cjs', 'cli-main.cjs.cache', 'cli-operate.cjs', `${PLATFORM}/opencode_pty.node`, `${PLATFORM}/opencode-pty-session`];

/** The config file a deployment gets: the sandbox's client account, its agent service, and overrides. */
export function deployConfig(sandbox: Sandbox, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  // Warm units off unless a suite asks: the suites count session units while
  // idle, and a spare's warm unit is one; test/broker/warm-units.integration.ts, bus-restart and the
  // bench run them, and TRY_WARM=1 runs every deployed suite with them.
  const session = { warmUnits: Number(process.env.TRY_WARM ?? 0), ...((overrides.session as Record<string, unknown> | undefined) ?? {}) };
  return { client: { user: sandbox.client.user, group: sandbox.client.group, service: AGENT_SERVICE }, ...overrides, session };
}

export async function deploy(sandbox: Sandbox, config: Record<string, unknown> | Partial<Config> = deployConfig(sandbox)): Promise<void> {
  const missing = BUNDLE.filter((name) => !existsSync(`${root}dist/${name}`));
  if (missing.length) throw new Error(`dist/ lacks ${missing.join(', ')}: run node build.mjs`);
  await sandbox.install([
    ...BUNDLE.map((name) => ({ from: `${root}dist/${name}`, to: `${INSTALL_DIR}/${basename(name)}`, mode: name.endsWith('opencode-pty-session') ? HELPER_MODE : 0o644 })),
    { content: `${JSON.stringify(config, null, 2)}\n`, to: CONFIG_PATH, mode: 0o644 },
  ]);
  // /usr is the host's, read-only: the bundle lives in /opt here, so a drop-in points the unit at it.
  const units: Record<string, string> = {
    [SOCKET_UNIT]: readFileSync(`${root}units/supervisor.socket`, 'utf8'),
    'opencode-pty-supervisor@.service': readFileSync(`${root}units/supervisor@.service`, 'utf8'),
    [`${SOCKET_UNIT}.d/group.conf`]: `[Socket]\nSocketGroup=${SOCKET_GROUP.name}\n`,
    'opencode-pty-supervisor@.service.d/paths.conf': [
      '[Service]',
      'ExecStart=',
      `ExecStart=/usr/bin/node ${INSTALL_DIR}/broker.cjs`,
      `Environment=OPENCODE_PTY_CONFIG=${CONFIG_PATH}`,
      '',
    ].join('\n'),
  };
  await sandbox.install(Object.entries(units).map(([name, content]) => ({ to: `/etc/systemd/system/${name}`, content })));
  const reload = await sandbox.systemctl('daemon-reload');
  if (reload.code !== 0) throw new Error(`daemon-reload: ${reload.stderr}`);
  const started = await sandbox.systemctl('start', SOCKET_UNIT);
  if (started.code !== 0) throw new Error(`cannot start ${SOCKET_UNIT}: ${started.stderr}`);
}

/** argv that runs the CLI as the agent service's main process, attached to stdio (--pty or --pipe). */
export function agentRun(sandbox: Sandbox, command: string[], options: { tty?: boolean; unit?: string; cwd?: string } = {}): string[] {
  return [
    'systemd-run',
    '--quiet',
    '--wait',
    '--collect',
    options.tty ? '--pty' : '--pipe',
    `--unit=${options.unit ?? AGENT_SERVICE}`,
    '--service-type=exec',
    `--uid=${sandbox.client.user}`,
    `--gid=${sandbox.client.group}`,
    `--property=SupplementaryGroups=${SOCKET_GROUP.name}`,
    `--working-directory=${options.cwd ?? sandbox.client.home}`,
    '--setenv=TERM=' + (process.env.TERM ?? 'xterm-256color'),
    '--',
    '/usr/bin/node',
    `${INSTALL_DIR}/cli.js`,
    'run',
    '--socket',
    SOCKET_PATH,
    '--',
    // systemd 252's systemd-run has no --expand-environment=no: ExecStart would turn $$ into $ and
    // expand $X, so every $ is doubled to reach the CLI unchanged.
    ...command.map((arg) => arg.replaceAll('$', '$$$$')),
  ];
}
