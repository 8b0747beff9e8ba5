// Review of kept sessions (issue 29) against the real systemd, broker, worker and session helper: what
// root must hold whatever the client does. Each test names the finding it proves; a failing one is an
// open finding (docs in the review report), not a broken test.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, sessionUnits } from '../support/supervisor.ts';
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

test('REVIEW-1: a kept START whose connection closes before the worker sees the start through still gets root\'s keep deadline', async () => {
  const before = (await sessionUnits(sandbox)).length;
  const sent = await agent.keep({ op: 'raw-start-close', argv: ['sleep', '600'], keepMs: 500, label: 'closed-at-once' });
  assert.is(sent.error, undefined, sent.message);
  let seen: Listed | undefined;
  await until(async () => (seen = (await list()).find((one) => one.label === 'closed-at-once')) !== undefined, 10_000, 'the kept session listed');
  // Nobody is attached: the connection closed. 500 ms later root's deadline must stop the unit.
  try {
    await until(async () => (await sessionUnits(sandbox)).length === before, 8_000, 'the unit stopped at the keep deadline');
  } catch (error) {
    const now = (await list()).find((one) => one.label === 'closed-at-once');
    if (now) await agent.keep({ op: 'stop-session', id: now.id });
    assert.unreachable(`${(error as Error).message}: listed as ${JSON.stringify(now ?? seen)} (root counts the closed START connection as attached; the deadline never arms)`);
  }
});

test('REVIEW-2: an ATTACH connection refuses descriptors in its data phase, as a START connection does once START is in (SO_PASSRIGHTS off)', async () => {
  const started = await agent.keep({ op: 'start', name: 'fd1', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'fd1' });
  await until(async () => (await list()).find((one) => one.id === started.id)?.state === 'detached', 10_000, 'listed as detached');
  const probe = await agent.keep({ op: 'raw-attach-fd', id: started.id! });
  await agent.keep({ op: 'stop-session', id: started.id! });
  assert.is(probe.error, undefined, JSON.stringify(probe));
  assert.is(probe.sendFd, 'EPERM', `a descriptor sent on an attached connection: ${JSON.stringify(probe)}`);
});

test('REVIEW-6: a child of the agent unit (a plugin, a tool) cannot plant a kept session that outlives it in the agent\'s LIST', async () => {
  const planted = await agent.childKeep({ op: 'start', name: 'planted', argv: ['sleep', '600'], keepMs: 60_000, label: 'dev server', read: {} });
  let listed: Listed[] = [];
  if (planted.error === undefined) {
    await until(async () => (listed = (await list()).filter((one) => one.label === 'dev server')).length > 0, 10_000, 'the planted session in the agent\'s LIST');
  }
  for (const one of listed) await agent.keep({ op: 'stop-session', id: one.id });
  assert.is(planted.error, 'NOT_PERMITTED', `a child's kept START: ${JSON.stringify(planted)}; the agent then lists ${JSON.stringify(listed)}`);
});

test('REVIEW-8: a uid-0 process without capabilities (a sandboxed root service) is not the operator: it may not list or attach', async () => {
  const started = await agent.keep({ op: 'start', name: 'cap1', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  const order = JSON.stringify({ keep: { op: 'list' } });
  const run = await sandbox.exec(['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', '/usr/bin/node', '/opt/opencode-pty/test-agent.js', 'once', order], { timeoutMs: 20_000 });
  await agent.keep({ op: 'stop-session', id: started.id! });
  const answer = JSON.parse(run.stdout || '{}') as { list?: { id: number }[]; error?: string };
  const capabilities = (await sandbox.exec(['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', 'grep', 'CapEff', '/proc/self/status'])).stdout.trim();
  assert.is(answer.error, 'NOT_PERMITTED', `root with ${capabilities}: ${run.stdout} ${run.stderr}`);
});

test('REVIEW-9: the agent polling LIST (twice a second for a minute) does not spend the admissions its own tools need to START', async () => {
  const polled = await agent.keep({ op: 'list-cycles', count: 125 });
  assert.is(polled.cycles, 125, JSON.stringify(polled));
  const tool = await agent.childKeep({ op: 'start', name: 'tool', argv: ['true'], keepMs: 0, read: { untilEnd: true } });
  assert.is(tool.error, undefined, `a tool's START after the agent's LISTs: ${JSON.stringify(tool)}`);
});

// Last: its 300 connections spend the account's admissions of the minute (120), which would refuse the tests after it.
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
