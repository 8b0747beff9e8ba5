// Sessions in a row through the real broker: a worker whose session ended cleanly serves the next
// start, so no Node process boots per start; the slot is still freed only once the unit is gone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { Agent } from '../support/agent.ts';
import { bootSupervisor, stopBroker, brokerProperty, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent: agent } = await bootSupervisor('broker-reuse', { limits: { idleExitMs: 600_000 } }));
});

test.after(async () => {
  await agent?.release();
  await stopBroker(sandbox);
  await sandbox?.stop();
});

const idle = () => until(async () => (await brokerProperty(sandbox, 'StatusText')) === '0 sessions, 0 handshakes', 10_000, 'the slot to be freed');

/** The worker process that logged each session's start, in order ("worker[PID]: session UNIT started …"). */
async function startedBy(): Promise<string[]> {
  const journal = await sandbox.journal(BROKER_UNIT);
  return [...journal.matchAll(/worker\[(\d+)\]: session \S+ started for pid/g)].map((match) => match[1]!);
}

test('three sessions in a row are served by one worker process, each slot freed with its unit gone', async () => {
  for (const word of ['one', 'two', 'three']) {
    const run = await agent.session(['sh', '-c', `echo ${word}`]);
    assert.is(run.code, 0, run.stderr);
    assert.is(run.stdout, `${word}\r\n`);
    await idle();
    assert.equal(await sessionUnits(sandbox), []);
  }
  const workers = await startedBy();
  assert.is(workers.length, 3, workers.join(' '));
  assert.is(new Set(workers).size, 1, `one worker served all three: ${workers.join(' ')}`);
  // Idle now: the broker keeps that worker warm and at most one spare beside it.
  const processes = (await sandbox.exec(['pgrep', '-f', '/opt/opencode-pty/worker.cjs'])).stdout.trim().split('\n').filter(Boolean);
  assert.ok(processes.includes(workers[0]!), 'the worker waits for the next session');
  assert.ok(processes.length <= 2, `idle workers: ${processes.join(' ')}`);
});

test.run();
