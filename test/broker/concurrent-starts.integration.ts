// Many sessions started at once by the agent's MainPID (and by children): every one runs to EXIT,
// and every session end is logged with its reason.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { Agent } from '../support/agent.ts';
import { bootSupervisor, measure, settle } from '../support/supervisor.ts';

let sandbox: Sandbox;
let driver: Agent;

test.before(async () => {
  ({ sandbox, agent: driver } = await bootSupervisor('broker-concurrent', { limits: { idleExitMs: 600_000 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

for (const count of [10, 16]) {
  test(`${count} concurrent starts from the MainPID all run to EXIT`, async () => {
    const results = await driver.sessions(count, ['sh', '-c', 'echo hi']);
    const failed = results.filter((r) => !r.ok || r.exit?.code !== 1 || r.exit?.status !== 0 || r.output !== 'hi\r\n');
    assert.equal(failed, [], `${JSON.stringify(failed)}\n${await sandbox.journal(BROKER_UNIT)}`);
    const leaked = await settle(sandbox, { ...(await measure(sandbox)), units: [] });
    assert.is(leaked.units, 0);
  });
}

test('every session end is logged with its reason', async () => {
  const journal = await sandbox.journal(BROKER_UNIT);
  const ends = journal.split('\n').filter((line) => / ended: /.test(line));
  assert.ok(ends.length >= 26, ends.join('\n'));
  for (const line of ends) assert.match(line, /ended: exit \(code 1 status 0 result success\)/);
});

test.run();
