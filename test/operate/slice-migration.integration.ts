// An install made when the sessions slice was opencode-pty-sessions.slice (nested, by its dashes, in
// opencode-pty.slice in opencode.slice, where the operator's own agent runs here), upgraded by
// `install` with no options: the config's old default is rewritten, the old slice's unit removed, the
// old slices stopped except opencode.slice (it holds the operator's unit), sessions then run in the
// top-level opencode_pty_sessions.slice; uninstall leaves opencode.slice and says why.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../sandbox/index.ts';
import { sha256 } from '../../src/operate/manifest.ts';
import { sliceUnit } from '../../src/operate/unit-files.ts';
import { bundleFiles } from './bundle-files.ts';

const AGENT = 'opencode-pty-agent.service';
/** The operator's own agent, in opencode.slice: a unit install did not create. */
const OPERATOR_UNIT = 'opencode.service';
const BUILD = '/opt/opencode-pty-build';
const CLI = '/usr/lib/opencode-pty/current/cli.js';
const UNITS = '/etc/systemd/system';
let sandbox: Sandbox;

const ptyctl = (args: string[]) => sandbox.exec(['/usr/bin/node', CLI, ...args], { timeoutMs: 120_000 });
const isActive = async (unit: string) => (await sandbox.exec(['systemctl', 'is-active', unit])).stdout.trim();

/** A session from the agent's unit that prints its own cgroup. */
async function sessionCgroup(): Promise<string> {
  const ran = await sandbox.exec(
    ['systemd-run', '--quiet', '--wait', '--collect', '--pipe', `--unit=${AGENT}`, '--service-type=exec', `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--working-directory=${sandbox.client.home}`, '--', '/usr/bin/node', CLI, 'run', '--', 'sh', '-c', 'grep ^0:: /proc/self/cgroup'],
    { timeoutMs: 60_000 },
  );
  assert.is(ran.code, 0, ran.stdout + ran.stderr);
  return ran.stdout.trim();
}

test.before(async () => {
  const reason = sandboxUnavailable();
  if (reason) throw new Error(reason);
  sandbox = await bootSandbox({ name: 'operate-slice-migration' });
  await sandbox.install(bundleFiles(BUILD));
  const fresh = await sandbox.exec(['groupdel', 'opencode-pty']);
  if (fresh.code !== 0) throw new Error(fresh.stderr);
});

test.after(async () => {
  await sandbox?.stop();
});

test('an old install: the old default moved, its slices stopped but the one holding the operator\'s unit, sessions top-level; uninstall leaves that one', async () => {
  const first = await sandbox.exec(['/usr/bin/node', `${BUILD}/cli.js`, 'install', '--client-user', sandbox.client.user, '--client-unit', AGENT], { timeoutMs: 120_000 });
  assert.is(first.code, 0, first.stdout + first.stderr);
  // Turn it into what an older version left: its config, its slice unit, a record without the slices.
  const record = JSON.parse((await sandbox.exec(['cat', '/usr/lib/opencode-pty/installed.json'])).stdout);
  const oldSlice = sliceUnit().replaceAll('opencode_pty_sessions', 'opencode-pty-sessions');
  delete record.slices;
  delete record.files[`${UNITS}/opencode_pty_sessions.slice`];
  record.files[`${UNITS}/opencode-pty-sessions.slice`] = sha256(oldSlice);
  const config = JSON.parse((await sandbox.exec(['cat', '/etc/opencode-pty/config.json'])).stdout);
  config.session.slice = 'opencode-pty-sessions.slice';
  await sandbox.install([
    { content: JSON.stringify(record), to: '/usr/lib/opencode-pty/installed.json', mode: 0o644 },
    { content: JSON.stringify(config), to: '/etc/opencode-pty/config.json', mode: 0o644 },
    { content: oldSlice, to: `${UNITS}/opencode-pty-sessions.slice`, mode: 0o644 },
  ]);
  const old = await sandbox.exec(['sh', '-c', `rm ${UNITS}/opencode_pty_sessions.slice && systemctl daemon-reload && systemctl stop opencode-pty-supervisor@broker.service`]);
  assert.is(old.code, 0, old.stderr);
  const operator = await sandbox.exec(['systemd-run', '--quiet', `--unit=${OPERATOR_UNIT}`, '--slice=opencode.slice', '--service-type=exec', '--', '/bin/sleep', '600']);
  assert.is(operator.code, 0, operator.stderr);
  // The old name nests: a session's cgroup is inside opencode.slice, beside the operator's agent.
  assert.match(await sessionCgroup(), /^0::\/opencode\.slice\/opencode-pty\.slice\/opencode-pty-sessions\.slice\/opencode-pty-session-[0-9a-f]+\.service$/);

  const upgrade = await ptyctl(['install']);
  assert.is(upgrade.code, 0, upgrade.stdout + upgrade.stderr);
  assert.match(upgrade.stdout, 'session.slice opencode-pty-sessions.slice (the old default, inside opencode.slice by its dashes) is now opencode_pty_sessions.slice');
  assert.match(upgrade.stdout, `done: remove ${UNITS}/opencode-pty-sessions.slice`);
  assert.match(upgrade.stdout, 'done: systemctl stop opencode-pty-sessions.slice opencode-pty.slice\n', upgrade.stdout);
  assert.is(JSON.parse((await sandbox.exec(['cat', '/etc/opencode-pty/config.json'])).stdout).session.slice, 'opencode_pty_sessions.slice');
  assert.is(await isActive('opencode-pty-sessions.slice'), 'inactive');
  assert.is(await isActive('opencode-pty.slice'), 'inactive');
  assert.is(await isActive('opencode.slice'), 'active', 'it holds the operator\'s unit');
  assert.is(await isActive(OPERATOR_UNIT), 'active');
  assert.match(await sessionCgroup(), /^0::\/opencode_pty_sessions\.slice\/opencode-pty-session-[0-9a-f]+\.service$/);
  assert.is((await ptyctl(['verify'])).code, 0);

  const uninstall = await ptyctl(['uninstall', '--purge']);
  assert.is(uninstall.code, 0, uninstall.stdout + uninstall.stderr);
  assert.match(uninstall.stdout, `note: left opencode.slice running: it holds ${OPERATOR_UNIT}, which install did not create`);
  assert.is(await isActive(OPERATOR_UNIT), 'active', 'uninstall stopped nothing of the operator\'s');
  assert.is(await isActive('opencode_pty_sessions.slice'), 'inactive');
  assert.is(await isActive('system-opencode\\x2dpty\\x2dsupervisor.slice'), 'inactive');
  assert.is((await sandbox.exec(['systemctl', 'stop', OPERATOR_UNIT])).code, 0);
});

test.run();
