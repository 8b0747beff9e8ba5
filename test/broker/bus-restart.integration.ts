// `systemctl restart dbus` mid-session: the broker and its workers reconnect, the live session is
// watched again and ends normally, and new sessions start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { Agent } from '../support/agent.ts';
import { bootSupervisor, brokerProperty, measure, settle } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

let sandbox: Sandbox;
let driver: Agent;

test.before(async () => {
  // Warm units on: a spare's warm unit started before the restart is neither reaped by the broker's
  // recheck (it is claimed) nor drawn on the new connection (no reference of the worker's there).
  ({ sandbox, agent: driver } = await bootSupervisor('broker-bus', { limits: { idleExitMs: 600_000 }, session: { warmUnits: 1 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

async function journalHas(text: string): Promise<boolean> {
  return (await sandbox.journal(BROKER_UNIT)).includes(text);
}

/** Units whose workers logged "session … started" so far. */
async function startedUnits(): Promise<string[]> {
  return [...(await sandbox.journal(BROKER_UNIT)).matchAll(/session (\S+) started for pid/g)].map((match) => match[1]!);
}

test('a session running across a bus restart ends with its EXIT; the broker keeps serving', async () => {
  const warm = await driver.sessions(1, ['true']);
  assert.ok(warm[0]!.ok, JSON.stringify(warm));
  const baseline = await measure(sandbox);
  const brokerPid = await brokerProperty(sandbox, 'MainPID');
  // The session waits on a file the test creates after the restart, so it spans it for sure.
  const marker = `${sandbox.client.home}/bus-restarted`;
  // The warm-up session logged its own "started" line, and its unit may not be collected yet: wait
  // for a line naming a new unit, and for that unit to be loaded (it was what made this test flaky).
  const before = new Set(await startedUnits());
  const running = driver.sessions(1, ['sh', '-c', `while [ ! -e ${marker} ]; do sleep 0.1; done; echo after`]);
  let unit: string | undefined;
  await until(
    async () => {
      unit ??= (await startedUnits()).find((name) => !before.has(name));
      return unit !== undefined && (await measure(sandbox)).units.includes(unit);
    },
    10_000,
    'the session unit',
  );
  const restart = await sandbox.systemctl('restart', 'dbus.service');
  assert.is(restart.code, 0, restart.stderr);
  await until(() => journalHas('broker: D-Bus connection back'), 20_000, 'the broker to reconnect', () => sandbox.journal(BROKER_UNIT));
  await sandbox.exec(['touch', marker], { as: 'client' });
  const [result] = await running;
  assert.ok(result!.ok, `${JSON.stringify(result)}\n${await sandbox.journal(BROKER_UNIT)}`);
  assert.equal(result!.exit, { reason: 'exit', code: 1, status: 0, result: 'success' });
  assert.is(result!.output, 'after\r\n');
  assert.is(await brokerProperty(sandbox, 'MainPID'), brokerPid, 'the same broker still serves');
  assert.is(await brokerProperty(sandbox, 'ActiveState'), 'active');
  const after = await driver.sessions(3, ['sh', '-c', 'echo new']);
  assert.ok(after.every((r) => r.ok && r.output === 'new\r\n'), JSON.stringify(after));
  const leaked = await settle(sandbox, baseline);
  assert.ok(leaked.fds <= 0 && leaked.units <= 0 && leaked.processes <= 0, `leaked ${JSON.stringify(leaked)}`);
});

test.run();
