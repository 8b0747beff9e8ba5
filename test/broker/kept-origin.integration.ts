// Kept sessions (issue 29) against the real systemd, broker, worker and session helper, two findings of
// their security review: a session another process of the agent's unit keeps is listed as not the
// agent's own (its origin), and a session is attached to for as long as it lives, past 255 connections.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('kept-origin', { limits: { maxKept: 4 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

type Listed = { id: number; state: string; label: string; deadlineMs: number | null; origin: string };
const list = async () => ((await agent.keep({ op: 'list' })).list ?? []) as Listed[];

test('a kept session a child of the agent unit (a plugin, a tool) started is listed with its origin, never as the agent\'s own', async () => {
  const planted = await agent.childKeep({ op: 'start', name: 'planted', argv: ['sleep', '600'], keepMs: 60_000, label: 'dev server', read: {} });
  assert.is(planted.error, undefined, `a child's kept START: ${JSON.stringify(planted)}`);
  const own = await agent.keep({ op: 'start', name: 'own', argv: ['sleep', '600'], keepMs: 60_000, label: 'dev server', read: {} });
  assert.is(own.error, undefined, own.message);
  let listed: Listed[] = [];
  await until(async () => (listed = (await list()).filter((one) => one.label === 'dev server')).length === 2, 10_000, 'both sessions in the agent\'s LIST');
  for (const one of listed) await agent.keep({ op: 'stop-session', id: one.id });
  assert.is(listed.find((one) => one.id === planted.id)?.origin, 'unit-process', JSON.stringify(listed));
  assert.is(listed.find((one) => one.id === own.id)?.origin, 'main-pid', JSON.stringify(listed));
});

test('a kept session can be attached to and detached from more than 255 times in its life (the agent stand-in\'s own cycles)', async () => {
  const started = await agent.keep({ op: 'start', name: 'cy1', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'cy1' });
  await until(async () => (await list()).find((one) => one.id === started.id)?.state === 'detached', 10_000, 'listed as detached');
  const cycles = await agent.keep({ op: 'attach-cycles', id: started.id!, count: 300 });
  await agent.keep({ op: 'stop-session', id: started.id! });
  assert.is(cycles.cycles, 300, `attach/detach cycles before a refusal: ${JSON.stringify(cycles)}`);
});

test.run();
