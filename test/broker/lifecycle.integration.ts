// The broker's life under systemd: idle exit, re-activation (also racing the exit), bad configs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SOCKET_GROUP, type Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT, CONFIG_PATH, deployConfig } from '../sandbox/deploy.ts';
import { Agent } from '../support/agent.ts';
import { bootSupervisor, brokerProperty } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

const IDLE_MS = 300;
let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent: agent } = await bootSupervisor('broker-life', { limits: { idleExitMs: IDLE_MS } }));
});

test.after(async () => {
  await sandbox?.stop();
});

async function brokerRuns(): Promise<number> {
  return (await sandbox.journal(BROKER_UNIT)).split('\n').filter((line) => line.includes('serving the socket systemd passed')).length;
}

test('the broker exits by itself when idle and comes back for the next connection', async () => {
  const first = await agent.session(['sh', '-c', 'echo one']);
  assert.is(first.stdout, 'one\r\n');
  await until(async () => (await brokerProperty(sandbox, 'ActiveState')) === 'inactive', 10_000, 'the idle exit');
  assert.is(await brokerProperty(sandbox, 'Result'), 'success');
  assert.match(await sandbox.journal(BROKER_UNIT), `idle for ${IDLE_MS} ms; exiting`);
  const runs = await brokerRuns();
  const second = await agent.session(['sh', '-c', 'echo two']);
  assert.is(second.stdout, 'two\r\n');
  assert.is(await brokerRuns(), runs + 1);
});

test('connections racing the idle exit are served by the next activation, none dropped', async () => {
  const before = await brokerRuns();
  // Pauses around the idle period put some connections right into the exit.
  for (let i = 0; i < 24; i += 1) {
    const session = await agent.session(['true']);
    assert.is(session.code, 0, `session ${i}: ${session.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS - 40 + (i % 8) * 10));
  }
  assert.ok((await brokerRuns()) > before + 1, 'the broker did exit and come back in between');
});

/** Waits for the unit's journal to hold `text`, failing with what it holds. */
async function journalSays(unit: string, text: string): Promise<void> {
  let journal = '';
  await until(async () => (journal = await sandbox.journal(unit)).includes(text), 10_000, `the journal to say ${text}`).catch((error: Error) => {
    throw new Error(`${error.message}; it holds:\n${journal.slice(-3000)}`);
  });
}

test('a bad config keeps the broker from starting, with the reason in the journal and its status', async () => {
  await sandbox.install([{ content: JSON.stringify(deployConfig(sandbox, { limits: { maxSessions: 0 } })), to: CONFIG_PATH }]);
  const refused = await agent.session(['true']);
  assert.is(refused.code, 125);
  assert.match(refused.stderr, 'supervisor cannot start; see its journal');
  await until(async () => (await brokerProperty(sandbox, 'ActiveState')) === 'failed', 10_000, 'the broker to fail');
  // journald takes the broker's last lines in its own time: under load they may land after the unit failed.
  await journalSays(BROKER_UNIT, 'config: limits.maxSessions: must be an integer from 1 to 1024');
  assert.match(await brokerProperty(sandbox, 'StatusText'), 'limits.maxSessions');
  await sandbox.install([{ content: JSON.stringify(deployConfig(sandbox, { limits: { idleExitMs: IDLE_MS } })), to: CONFIG_PATH }]);
  await sandbox.systemctl('reset-failed', BROKER_UNIT);
  // The queued connection was answered, so systemd did not loop on it: the socket still listens.
  assert.is((await sandbox.systemctl('is-active', 'opencode-pty-supervisor.socket')).stdout.trim(), 'active');
  const fixed = await agent.session(['sh', '-c', 'echo back']);
  assert.is(fixed.stdout, 'back\r\n', fixed.stderr);
});

test('a socket whose group is not the configured socket group keeps the broker from serving', async () => {
  const dropIn = '/etc/systemd/system/opencode-pty-supervisor.socket.d/group.conf';
  const setGroup = async (group: string) => {
    await sandbox.install([{ content: `[Socket]\nSocketGroup=${group}\n`, to: dropIn }]);
    await sandbox.systemctl('daemon-reload');
    // A socket whose service still runs (the last test's broker, not yet idle under load) refuses to
    // start again ("Socket service … already active, refusing"), and the next connect found no socket.
    await sandbox.systemctl('stop', BROKER_UNIT);
    const restart = await sandbox.systemctl('restart', 'opencode-pty-supervisor.socket');
    assert.is(restart.code, 0, restart.stderr);
  };
  // The client account's own group: every session program could connect; the broker refuses to serve.
  await setGroup(sandbox.client.group);
  try {
    const refused = await agent.session(['true']);
    const seen = async () => `${JSON.stringify(refused)}\n${await sandbox.journal(BROKER_UNIT)}`;
    assert.is(refused.code, 125, await seen());
    assert.match(refused.stderr, 'supervisor cannot start; see its journal', await seen());
    await until(async () => (await brokerProperty(sandbox, 'ActiveState')) === 'failed', 10_000, 'the broker to fail');
    await journalSays(BROKER_UNIT, `must be mode 0660 with group ${SOCKET_GROUP.name}`);
  } finally {
    await setGroup(SOCKET_GROUP.name);
    await sandbox.systemctl('reset-failed', BROKER_UNIT);
  }
  const fixed = await agent.session(['sh', '-c', 'echo ok']);
  assert.is(fixed.stdout, 'ok\r\n', fixed.stderr);
});

test.run();
