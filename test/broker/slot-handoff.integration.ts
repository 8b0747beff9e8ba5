// With one session slot, sessions one after another from the agent's MainPID, each started as soon
// as the one before has sent its EXIT: the start finds the slot still held by a session that is only
// finishing (its unit being stopped and collected) and waits for it; none is refused SESSION_LIMIT.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { Driver, deployTorture, measure, settle } from '../torture/harness.ts';
import type { SessionResult } from '../torture/driver.ts';

let sandbox: Sandbox;
let driver: Driver;

test.before(async () => {
  sandbox = await bootSandbox({ name: 'slots-handoff' });
  await deployTorture(sandbox, { limits: { maxSessions: 1, idleExitMs: 600_000 } });
  driver = await Driver.start(sandbox);
});

test.after(async () => {
  await sandbox?.stop();
});

test('a start right on the last session\'s EXIT waits for its slot instead of being refused', async () => {
  const { results } = await driver.command<{ results: SessionResult[] }>({ sequential: { count: 12, argv: ['sh', '-c', 'echo hi'] } });
  const failed = results.filter((r) => !r.ok || r.exit?.status !== 0 || r.output !== 'hi\r\n');
  const journal = await sandbox.journal(BROKER_UNIT);
  assert.equal(failed, [], `${JSON.stringify(failed)}\n${journal}`);
  assert.is(results.length, 12);
  assert.not.match(journal, /session limit reached/);
  const leaked = await settle(sandbox, { ...(await measure(sandbox)), units: [] });
  assert.is(leaked.units, 0);
});

test.run();
