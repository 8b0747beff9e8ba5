// Review of kept sessions (issue 29) against the real systemd, broker, worker and session helper: what
// root must hold whatever the client does. Each test names the finding it proves; a failing one is an
// open finding (docs in the review report), not a broken test.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('keep-review', { limits: { maxKept: 4 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

type Listed = { id: number; state: string; label: string; deadlineMs: number | null };
const list = async () => ((await agent.keep({ op: 'list' })).list ?? []) as Listed[];

test('REVIEW-6: a child of the agent unit (a plugin, a tool) cannot plant a kept session that outlives it in the agent\'s LIST', async () => {
  const planted = await agent.childKeep({ op: 'start', name: 'planted', argv: ['sleep', '600'], keepMs: 60_000, label: 'dev server', read: {} });
  let listed: Listed[] = [];
  if (planted.error === undefined) {
    await until(async () => (listed = (await list()).filter((one) => one.label === 'dev server')).length > 0, 10_000, 'the planted session in the agent\'s LIST');
  }
  for (const one of listed) await agent.keep({ op: 'stop-session', id: one.id });
  assert.is(planted.error, 'NOT_PERMITTED', `a child's kept START: ${JSON.stringify(planted)}; the agent then lists ${JSON.stringify(listed)}`);
});

test('REVIEW-3: a kept session can be attached to and detached from more than 255 times in its life', async () => {
  const started = await agent.keep({ op: 'start', name: 'cy1', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'cy1' });
  await until(async () => (await list()).find((one) => one.id === started.id)?.state === 'detached', 10_000, 'listed as detached');
  const cycles = await agent.keep({ op: 'attach-cycles', id: started.id!, count: 300 });
  await agent.keep({ op: 'stop-session', id: started.id! });
  assert.is(cycles.cycles, 300, `attach/detach cycles before a refusal: ${JSON.stringify(cycles)}`);
});

test.run();
