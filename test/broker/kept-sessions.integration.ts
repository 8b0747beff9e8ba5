// Kept sessions end to end (protocol version 3, issue 29) against the real systemd, broker, worker and
// session helper: a session outlives its connection, is listed, attached to with exact replay (sha256)
// and then live, by a controller and observers; its keep deadline stops its unit; who may ask.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('kept-sessions', { limits: { maxKept: 3 } }));
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

test.run();
