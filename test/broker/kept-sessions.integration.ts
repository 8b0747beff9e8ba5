// Kept sessions end to end (protocol version 3, issue 29) against the real systemd, broker, worker and
// session helper: a session outlives its connection, is listed, attached to with exact replay (sha256)
// and then live, by a controller and observers; its keep deadline stops its unit; who may ask; what
// root holds whatever the client does (a START connection closed at once, descriptors on an ATTACH's
// connection, a capability-less root, the agent's own LISTs against the admission rate).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { SOCKET_GROUP, type Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { Agent as AgentStandIn } from '../support/agent.ts';
import { bootSupervisor, brokerProperty, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';
import { AGENT_SERVICE, BROKER_UNIT } from '../sandbox/deploy.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('kept-sessions', { limits: { maxSessions: 4, maxKept: 3, maxObservers: 1 }, session: { maxRetainedBytes: 16 * 1024 * 1024 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
/** `seq 1 N` as the terminal gives it (ONLCR: \r\n). */
const seq = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\r\n`).join('');

test('a kept session survives its connection, is listed, and an attach from 0 replays exactly its output, then its EXIT', async () => {
  const expected = seq(5000);
  const started = await agent.keep({ op: 'start', name: 'a', argv: ['sh', '-c', 'seq 1 5000; read line; exit 7'], keepMs: 60_000, label: 'count', read: { bytes: 100 } });
  assert.is(started.error, undefined, started.message);
  assert.ok(started.id! > 0 && started.id! < 2 ** 52);
  assert.is(started.first, 0);
  const detached = await agent.keep({ op: 'detach', name: 'a' });
  const seen = detached.offset!;
  const listed = (await agent.keep({ op: 'list' })).list as { id: number; state: string; label: string; program: string; next: number; deadlineMs: number | null; fresh: boolean }[];
  const entry = listed.find((one) => one.id === started.id);
  assert.ok(entry, JSON.stringify(listed));
  assert.equal([entry!.label, entry!.program, entry!.fresh], ['count', 'sh', true]);
  assert.is((entry as unknown as { origin: string }).origin, 'main-pid', 'started by the agent service\'s main process (REVIEW-6)');
  await until(async () => {
    const again = ((await agent.keep({ op: 'list' })).list as typeof listed).find((one) => one.id === started.id)!;
    return again.state === 'detached' && again.next === expected.length && again.deadlineMs !== null;
  }, 10_000, 'the session detached, its output all retained, its deadline armed');
  const replay = await agent.keep({ op: 'attach', name: 'b', id: started.id!, from: 0, role: 'control', rows: 24, cols: 80, read: { bytes: expected.length } });
  assert.is(replay.error, undefined, replay.message);
  assert.is(replay.first, 0);
  assert.is(replay.bytes, expected.length);
  assert.is(replay.sha256, sha(expected), 'the replay is exactly the program\'s output');
  assert.ok(seen <= expected.length);
  await agent.keep({ op: 'write', name: 'b', data: 'go\r' });
  const ended = await agent.keep({ op: 'read', name: 'b', read: { untilEnd: true } });
  assert.equal(ended.end && (ended.end as { reason: string; status: number }).reason, 'exit', JSON.stringify(ended));
  assert.is((ended.end as { status: number }).status, 7);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 10_000, 'the unit gone');
});

type Listed = { id: number; state: string; next: number; controllers: number; observers: number; end: { code: number; status: number } | null };
const listed = async (id: number) => ((await agent.keep({ op: 'list' })).list as Listed[]).find((one) => one.id === id);

test('an attach from the last offset seen gives the rest, nothing repeated; an observer beside the controller sees the same bytes; control changes hands', async () => {
  const expected = seq(20000);
  const started = await agent.keep({ op: 'start', name: 'c1', argv: ['sh', '-c', 'seq 1 10000; read a; seq 10001 20000; read b; exit 3'], keepMs: 60_000, read: { bytes: 30 } });
  const first = await agent.keep({ op: 'detach', name: 'c1' });
  const part = Buffer.from(expected).subarray(0, first.bytes!).toString();
  assert.is(first.sha256, sha(part), 'the first connection read a prefix');
  const rest = await agent.keep({ op: 'attach', name: 'c2', id: started.id!, from: first.offset, role: 'control', read: { bytes: seq(10000).length - first.offset! } });
  assert.is(rest.first, first.offset);
  const observer = await agent.keep({ op: 'attach', name: 'o1', id: started.id!, from: 0, role: 'observe', read: { bytes: seq(10000).length } });
  assert.is(observer.role, 'observe');
  await until(async () => (await listed(started.id!))?.observers === 1, 5000, 'one observer listed');
  await agent.keep({ op: 'write', name: 'c2', data: 'x\r' });
  // A second controller: the first is demoted to an observer and told so.
  const second = await agent.keep({ op: 'attach', name: 'c3', id: started.id!, role: 'control', read: {} });
  assert.is(second.role, 'control');
  const demoted = await agent.keep({ op: 'read', name: 'c2', read: { bytes: expected.length - first.offset! + 2 } });
  assert.equal(demoted.changes!.at(-1), { generation: second.generation!, role: 'observe' });
  await agent.keep({ op: 'write', name: 'c3', data: 'y\r' });
  const end = await agent.keep({ op: 'read', name: 'c2', read: { untilEnd: true } });
  const watched = await agent.keep({ op: 'read', name: 'o1', read: { untilEnd: true } });
  // The input echoed ("x\r\n", "y\r\n") sits between the program's own output: each connection's bytes
  // from its start to the end are the same stream.
  const whole = `${seq(10000)}x\r\n${seq(20000).slice(seq(10000).length)}y\r\n`;
  assert.is(sha(part) && first.sha256, sha(whole.slice(0, first.bytes!)));
  assert.is(end.sha256, sha(whole.slice(first.offset!)), 'the rest, with nothing repeated or lost');
  assert.is(watched.sha256, sha(whole), 'the observer saw the same bytes from 0');
  assert.equal([(end.end as { status: number }).status, (watched.end as { status: number }).status], [3, 3], 'EXIT to every connection attached');
});

test('a program that exits while detached: listed as ended with its status, and an attach gets its replay, then its EXIT', async () => {
  const go = `${sandbox.client.home}/go-e1`;
  // The program ends only once the test says so, after the detach: no race with the connection's close.
  const started = await agent.keep({ op: 'start', name: 'e1', argv: ['sh', '-c', `echo hi; while [ ! -e ${go} ]; do sleep 0.02; done; echo bye; exit 5`], keepMs: 60_000, read: { bytes: 4 } });
  await agent.keep({ op: 'detach', name: 'e1' });
  await until(async () => (await listed(started.id!))?.state === 'detached', 10_000, 'the session listed as detached');
  await agent.command({ run: ['touch', go] });
  await until(async () => (await listed(started.id!))?.state === 'ended', 10_000, 'the session listed as ended');
  assert.equal((await listed(started.id!))!.end, { code: 1, status: 5 });
  const attached = await agent.keep({ op: 'attach', name: 'e2', id: started.id!, from: 0, read: { untilEnd: true } });
  assert.is(attached.sha256, sha('hi\r\nbye\r\n'));
  assert.equal(attached.end && [(attached.end as { reason: string }).reason, (attached.end as { status: number }).status], ['exit', 5]);
  await until(async () => (await listed(started.id!)) === undefined, 10_000, 'the session gone after its EXIT');
});

test('STOP_SESSION of a program that ended while detached: STOPPED carries how the program ended, and the unit goes', async () => {
  // The program ends only once the test says so, after the detach: no race with the connection's close.
  const go = `${sandbox.client.home}/go-se1`;
  const started = await agent.keep({ op: 'start', name: 'se1', argv: ['sh', '-c', `while [ ! -e ${go} ]; do sleep 0.02; done; echo done; exit 4`], keepMs: 60_000, read: {} });
  await agent.keep({ op: 'detach', name: 'se1' });
  await until(async () => (await listed(started.id!))?.state === 'detached', 10_000, 'the session listed as detached');
  await agent.command({ run: ['touch', go] });
  await until(async () => (await listed(started.id!))?.state === 'ended', 10_000, 'the session listed as ended');
  const stopped = await agent.keep({ op: 'stop-session', id: started.id! });
  assert.is(stopped.error, undefined, stopped.message);
  const end = stopped.end as { reason: string; code: number; status: number; result: string };
  assert.equal([end.reason, end.code, end.status, end.result], ['stopped', 1, 4, 'exit-code'], JSON.stringify(stopped));
  await until(async () => (await listed(started.id!)) === undefined, 10_000, 'the session gone from the list');
});

test('the keep deadline stops the unit of a session nobody attaches to', async () => {
  const before = (await sessionUnits(sandbox)).length;
  const started = await agent.keep({ op: 'start', name: 'd1', argv: ['sleep', '600'], keepMs: 500, read: {} });
  assert.is((await sessionUnits(sandbox)).length, before + 1);
  await agent.keep({ op: 'detach', name: 'd1' });
  await until(async () => (await listed(started.id!)) === undefined && (await sessionUnits(sandbox)).length === before, 15_000, 'the unit stopped at the deadline');
});

test('who may ask: a child of the agent unit is NOT_PERMITTED; root lists; an unknown id is NO_SESSION; STOP_SESSION ends one as a STOP', async () => {
  const started = await agent.keep({ op: 'start', name: 'w1', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  await agent.keep({ op: 'detach', name: 'w1' });
  for (const order of [{ op: 'list' }, { op: 'attach', name: 'x', id: started.id!, from: 0 }, { op: 'stop-session', id: started.id! }] as const) {
    const refused = await agent.childKeep(order);
    assert.is(refused.error, 'NOT_PERMITTED', `${order.op}: ${JSON.stringify(refused)}`);
  }
  const unknown = await agent.keep({ op: 'attach', name: 'x', id: 12345, from: 0 });
  assert.is(unknown.error, 'NO_SESSION');
  const root = await sandbox.exec(['/usr/bin/node', '/opt/opencode-pty/test-agent.js', 'once', JSON.stringify({ keep: { op: 'list' } })], { timeoutMs: 20_000 });
  const rootList = JSON.parse(root.stdout || '{}') as { list?: Listed[]; error?: string };
  assert.ok(rootList.list?.some((one) => one.id === started.id), `root lists every kept session: ${root.stdout} ${root.stderr}`);
  // Another account, even with the socket's group, is refused at accept, before any request is read.
  const other = await sandbox.exec(['/usr/bin/node', '/opt/opencode-pty/test-agent.js', 'once', JSON.stringify({ keep: { op: 'list' } })], { as: 'other', groups: [SOCKET_GROUP.gid], timeoutMs: 20_000 });
  assert.is((JSON.parse(other.stdout || '{}') as { error?: string }).error, 'AUTHENTICATION', `${other.stdout} ${other.stderr}`);
  // Offsets past the session's next are refused by the helper, and the worker says so.
  const far = await agent.keep({ op: 'attach', name: 'x', id: started.id!, from: 1_000_000 });
  assert.is(far.error, 'BAD_OFFSET', JSON.stringify(far));
  // One observer at most here (limits.maxObservers 1): the next one is refused.
  const firstObserver = await agent.keep({ op: 'attach', name: 'ob1', id: started.id!, role: 'observe', read: {} });
  assert.is(firstObserver.error, undefined, firstObserver.message);
  const secondObserver = await agent.keep({ op: 'attach', name: 'ob2', id: started.id!, role: 'observe', read: {} });
  assert.is(secondObserver.error, 'OBSERVER_LIMIT', JSON.stringify(secondObserver));
  const stopped = await agent.keep({ op: 'stop-session', id: started.id! });
  assert.is(stopped.error, undefined, stopped.message);
  assert.is((stopped.end as { reason: string }).reason, 'stopped');
  // The observer still attached reads STOPPED too.
  const watched = await agent.keep({ op: 'read', name: 'ob1', read: { untilEnd: true } });
  assert.is((watched.end as { reason: string }).reason, 'stopped', JSON.stringify(watched));
  await until(async () => (await listed(started.id!)) === undefined, 10_000, 'the stopped session gone from the list');
});

test('limits: a kept START beyond limits.maxKept is KEEP_LIMIT; with every session slot held by kept sessions an ATTACH still goes through (never SESSION_LIMIT)', async () => {
  const ids: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const one = await agent.keep({ op: 'start', name: `k${i}`, argv: ['sleep', '600'], keepMs: 60_000, read: {} });
    assert.is(one.error, undefined, `${one.message}\n${one.error ? await sandbox.journal(BROKER_UNIT) : ''}`);
    ids.push(one.id!);
    await agent.keep({ op: 'detach', name: `k${i}` });
  }
  const fourth = await agent.keep({ op: 'start', name: 'k3', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(fourth.error, 'KEEP_LIMIT');
  await until(async () => (await brokerProperty(sandbox, 'StatusText')).startsWith('3 sessions, 0 handshakes, 3 kept'), 5000, 'the broker\'s status naming them');
  // The last slot (limits.maxSessions 4) to a session that is not kept: every slot is held now.
  const plain = await agent.keep({ op: 'start', name: 'plain', argv: ['sleep', '600'], keepMs: 0, read: {} });
  assert.is(plain.error, undefined, plain.message);
  const attached = await agent.keep({ op: 'attach', name: 'k0b', id: ids[0]!, read: {} });
  assert.is(attached.error, undefined, attached.message);
  await agent.keep({ op: 'detach', name: 'k0b' });
  // An ATTACH to a session that is not kept is NO_SESSION.
  assert.is((await agent.keep({ op: 'attach', name: 'p2', id: plain.id!, read: {} })).error, 'NO_SESSION');
  await agent.keep({ op: 'detach', name: 'plain' });
  for (const id of ids) assert.is((await agent.keep({ op: 'stop-session', id })).error, undefined);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 20_000, 'every unit gone', async () => `${(await sessionUnits(sandbox)).join(' ')} ${JSON.stringify((await agent.keep({ op: 'list' })).list)} ${(await sandbox.journal(BROKER_UNIT)).split('\n').slice(-15).join('\n')}`);
});

test('the proof: the agent killed (SIGKILL) while a kept program writes, restarted, attaches from the last offset it saw: both connections together are the program\'s output, nothing repeated', async () => {
  const lines = 300_000;
  const expected = seq(lines);
  const started = await agent.keep({ op: 'start', name: 'p1', argv: ['seq', '1', String(lines)], keepMs: 60_000, retainBytes: 16 * 1024 * 1024, read: { bytes: 64 * 1024 } });
  assert.is(started.error, undefined, started.message);
  // What the agent had seen when it last said so: its offset and the sha256 of those bytes.
  const seen = started.offset!;
  assert.is(started.sha256, sha(expected.slice(0, seen)));
  await sandbox.exec(['kill', '-9', String(agent.mainPid)]);
  await until(async () => (await sandbox.systemctl('is-active', AGENT_SERVICE)).stdout.trim() !== 'active', 10_000, 'the agent dead');
  // A SIGKILLed main process leaves its unit failed and loaded: cleared, as an operator's restart would.
  await sandbox.systemctl('reset-failed', AGENT_SERVICE);
  agent = await AgentStandIn.start(sandbox);
  await until(async () => (await listed(started.id!))?.state === 'ended', 20_000, 'the program done, detached');
  const replayBegan = performance.now();
  const rest = await agent.keep({ op: 'attach', name: 'p2', id: started.id!, from: seen, read: { untilEnd: true, ms: 30_000 } });
  console.log(`# the proof: ${expected.length - seen} bytes replayed from offset ${seen} to EXIT in ${(performance.now() - replayBegan).toFixed(0)} ms`);
  assert.is(rest.error, undefined, rest.message);
  assert.equal(rest.truncated, [], 'the ring held it all');
  assert.is(rest.first, seen);
  assert.is(rest.bytes, expected.length - seen, `no byte repeated or lost: ${JSON.stringify({ ...rest, sha256: undefined })}`);
  assert.is(rest.sha256, sha(expected.slice(seen)), 'the rest is exactly the program\'s output after what the dead agent saw');
  assert.equal((rest.end as { reason: string; status: number }), { ...(rest.end as object), reason: 'exit', status: 0 });
});

test('rapid attach and detach, 60 cycles: the session goes on, root\'s counts come back to none attached, the deadline re-armed each time', async () => {
  const started = await agent.keep({ op: 'start', name: 'r0', argv: ['sh', '-c', 'seq 1 2000; exec sleep 600'], keepMs: 60_000, read: { bytes: seq(2000).length } });
  await agent.keep({ op: 'detach', name: 'r0' });
  const times: number[] = [];
  for (let i = 0; i < 60; i += 1) {
    const began = performance.now();
    const one = await agent.keep({ op: 'attach', name: `r${i + 1}`, id: started.id!, from: 0, role: i % 2 ? 'observe' : 'control', read: { bytes: seq(2000).length } });
    times.push(performance.now() - began);
    assert.is(one.error, undefined, `cycle ${i}: ${one.message}`);
    assert.is(one.sha256, sha(seq(2000)), `cycle ${i}: the whole replay`);
    await agent.keep({ op: 'detach', name: `r${i + 1}` });
  }
  await until(async () => {
    const entry = await listed(started.id!);
    return entry?.state === 'detached' && entry.controllers === 0 && entry.observers === 0;
  }, 10_000, 'none attached after the cycles');
  times.sort((a, b) => a - b);
  console.log(`# ATTACH from 0 with a ${seq(2000).length}-byte replay, through the agent stand-in (its command round trip included): p50 ${times[30]!.toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms`);
  assert.is((await agent.keep({ op: 'stop-session', id: started.id! })).error, undefined);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 20_000, 'its unit gone');
});

// What root holds whatever the client does (from the kept-session review).
type Seen = { id: number; state: string; label: string; deadlineMs: number | null };
const list = async () => ((await agent.keep({ op: 'list' })).list ?? []) as Seen[];

test('a kept START whose connection closes before the worker sees the start through still gets root\'s keep deadline', async () => {
  const before = (await sessionUnits(sandbox)).length;
  const sent = await agent.keep({ op: 'raw-start-close', argv: ['sleep', '600'], keepMs: 500, label: 'closed-at-once' });
  assert.is(sent.error, undefined, sent.message);
  let seen: Seen | undefined;
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

test('an ATTACH connection refuses descriptors in its data phase, as a START connection does once START is in (SO_PASSRIGHTS off)', async () => {
  const started = await agent.keep({ op: 'start', name: 'fd1', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'fd1' });
  await until(async () => (await list()).find((one) => one.id === started.id)?.state === 'detached', 10_000, 'listed as detached');
  const probe = await agent.keep({ op: 'raw-attach-fd', id: started.id! });
  await agent.keep({ op: 'stop-session', id: started.id! });
  assert.is(probe.error, undefined, JSON.stringify(probe));
  assert.is(probe.sendFd, 'EPERM', `a descriptor sent on an attached connection: ${JSON.stringify(probe)}`);
});

test('a uid-0 process without capabilities (a sandboxed root service) is not the operator: it may not list or attach', async () => {
  const started = await agent.keep({ op: 'start', name: 'cap1', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  const order = JSON.stringify({ keep: { op: 'list' } });
  const run = await sandbox.exec(['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', '/usr/bin/node', '/opt/opencode-pty/test-agent.js', 'once', order], { timeoutMs: 20_000 });
  await agent.keep({ op: 'stop-session', id: started.id! });
  const answer = JSON.parse(run.stdout || '{}') as { list?: { id: number }[]; error?: string };
  const capabilities = (await sandbox.exec(['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', 'grep', 'CapEff', '/proc/self/status'])).stdout.trim();
  assert.is(answer.error, 'NOT_PERMITTED', `root with ${capabilities}: ${run.stdout} ${run.stderr}`);
});

test('the agent polling LIST (twice a second for a minute) does not spend the admissions its own tools need to START', async () => {
  const polled = await agent.keep({ op: 'list-cycles', count: 125 });
  assert.is(polled.cycles, 125, JSON.stringify(polled));
  const tool = await agent.childKeep({ op: 'start', name: 'tool', argv: ['true'], keepMs: 0, read: { untilEnd: true } });
  assert.is(tool.error, undefined, `a tool's START after the agent's LISTs: ${JSON.stringify(tool)}`);
});

test('300 attach and detach cycles on one session, past the 255 conn numbers a session has at once: each attach goes through with the whole replay (REVIEW-3)', async () => {
  const expected = seq(500);
  const started = await agent.keep({ op: 'start', name: 'n0', argv: ['sh', '-c', 'seq 1 500; exec sleep 600'], keepMs: 60_000, read: { bytes: expected.length } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'n0' });
  for (let i = 1; i <= 300; i += 1) {
    // control each time: a previous controller the helper has not let go of yet is demoted, never refused.
    const one = await agent.keep({ op: 'attach', name: `n${i}`, id: started.id!, from: 0, role: 'control', read: { bytes: expected.length } });
    assert.is(one.error, undefined, `cycle ${i}: ${one.message}`);
    assert.is(one.sha256, sha(expected), `cycle ${i}: the whole replay`);
    await agent.keep({ op: 'detach', name: `n${i}` });
  }
  await until(async () => {
    const entry = await listed(started.id!);
    return entry?.state === 'detached' && entry.controllers === 0 && entry.observers === 0;
  }, 10_000, 'none attached after the cycles');
  assert.is((await agent.keep({ op: 'stop-session', id: started.id! })).error, undefined);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 20_000, 'its unit gone');
});

test.run();
