// A kept session whose wall clock (protocol version 4's budget, RuntimeMaxSec=) runs out while nobody is
// attached: systemd stops its whole unit, the session helper and its ring with it, so the end is root's
// to keep (issue 32: "a kept session that ends by OOM or timeout while detached still gives its EXIT on
// attach"). LIST shows it ended, and the next ATTACH gets its EXIT with result `timeout`: while systemd
// still waits for the helper (TimeoutStopSec=), and after, from the end root keeps.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, sessionUnits } from '../support/supervisor.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { until } from '../support/wait.ts';

/** How long systemd waits after the wall clock's SIGTERM before its SIGKILL (TimeoutStopSec=): long enough
 * that the second test's ATTACH comes inside it on a loaded machine. */
const STOP_TIMEOUT_SEC = 20;

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('kept-budget-end', { session: { stopTimeoutSec: STOP_TIMEOUT_SEC } }));
});

test.after(async () => {
  await sandbox?.stop();
});

type Listed = { id: number; state: string; end: { code: number; status: number } | null };
const keptFiles = async () => (await sandbox.exec(['sh', '-c', 'ls -A /run/opencode-pty-kept 2>/dev/null'])).stdout.split('\n').filter(Boolean);
const listed = async (id: number) => ((await agent.keep({ op: 'list' })).list as Listed[]).find((one) => one.id === id);

// RuntimeMaxSec= makes systemd SIGTERM and SIGHUP every process of the unit; the helper catches SIGTERM
// and holds its ring (an ATTACH then still gets the replay and the end: the next test), and systemd
// SIGKILLs it TimeoutStopSec= later. With no connection attached no last frame is written: root keeps
// the end past the unit (the unit's Result, and the program's status as LIST showed it), lists it as
// ended, and gives it to the next ATTACH (ATTACHED, then EXIT; no replay, the ring went with the helper),
// after which it is forgotten.
test('a kept session whose wall clock passes while detached: listed as ended, and an ATTACH gets its EXIT with result timeout', async () => {
  const started = await agent.keep({ op: 'start', name: 't1', argv: ['sh', '-c', 'echo up; exec sleep 600'], keepMs: 120_000, budgets: { timeMs: 2000 }, read: { bytes: 4 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 't1' });
  // The program ends at the wall clock's SIGTERM and SIGHUP; its helper says how (LIST), then is SIGKILLed.
  let stopping: Listed | undefined;
  await until(async () => (stopping = await listed(started.id!))?.state === 'ended', 15_000, 'listed as ended while its unit stops');
  // systemd stops the unit at its RuntimeMaxSec=, with nobody attached.
  await until(async () => (await sessionUnits(sandbox)).length === 0, (STOP_TIMEOUT_SEC + 15) * 1000, 'the unit stopped by its wall clock');
  const entry = await listed(started.id!);
  assert.ok(entry, 'the session is still listed once its unit is gone');
  assert.is(entry!.state, 'ended', JSON.stringify(entry));
  assert.equal(entry!.end, stopping!.end, 'the same end as before its helper was killed');
  const attached = await agent.keep({ op: 'attach', name: 't2', id: started.id!, from: 0, read: { untilEnd: true, ms: 10_000 } });
  assert.is(attached.error, undefined, attached.message);
  const end = attached.end as { reason: string; result: string; code: number; status: number } | undefined;
  assert.equal([end?.reason, end?.result], ['exit', 'timeout'], JSON.stringify(attached));
  // The program's end as LIST showed it (sh's exec'd sleep, killed by the wall clock's SIGTERM or SIGHUP), not the helper's SIGKILL.
  assert.equal([end?.code, end?.status], [stopping!.end?.code, stopping!.end?.status], JSON.stringify({ stopping, end }));
  assert.is(attached.bytes, 0, 'no replay: the ring went with the helper');
  assert.is(await listed(started.id!), undefined, 'forgotten once its EXIT is given');
  assert.equal(await keptFiles(), [], 'its ended record removed');
});

test('the end root keeps outlives a restart of the broker: still listed as ended, and STOP_SESSION gets STOPPED with it', async () => {
  const started = await agent.keep({ op: 'start', name: 'r1', argv: ['sh', '-c', 'echo up; exec sleep 600'], keepMs: 120_000, budgets: { timeMs: 2000 }, read: { bytes: 4 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'r1' });
  await until(async () => (await sessionUnits(sandbox)).length === 0, (STOP_TIMEOUT_SEC + 15) * 1000, 'the unit stopped by its wall clock');
  assert.equal(await keptFiles(), [`${started.id}.ended.json`], 'the ended record alone');
  const restarted = await sandbox.systemctl('restart', BROKER_UNIT);
  assert.is(restarted.code, 0, restarted.stderr);
  const entry = await listed(started.id!);
  assert.is(entry?.state, 'ended', JSON.stringify(entry));
  const stopped = await agent.keep({ op: 'stop-session', id: started.id! });
  const end = stopped.end as { reason: string; result: string } | undefined;
  assert.equal([end?.reason, end?.result], ['stopped', 'timeout'], JSON.stringify(stopped));
  assert.is(await listed(started.id!), undefined, 'forgotten once its STOPPED is given');
  assert.equal(await keptFiles(), []);
});

test('a kept session whose wall clock passes while detached, attached while systemd still waits for its helper: the replay, then EXIT with result timeout', async () => {
  const started = await agent.keep({ op: 'start', name: 'w1', argv: ['sh', '-c', 'echo up; exec sleep 600'], keepMs: 120_000, budgets: { timeMs: 2000 }, read: { bytes: 4 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'w1' });
  // RuntimeMaxSec= sends SIGTERM and SIGHUP: the program ends, the helper (which catches SIGTERM) holds its
  // ring until an ATTACH, or until systemd's SIGKILL STOP_TIMEOUT_SEC later (the test above).
  await until(async () => (await listed(started.id!))?.state === 'ended', 15_000, 'the session listed as ended');
  assert.is((await sessionUnits(sandbox)).length, 1, 'the unit is still there, stopping');
  const attached = await agent.keep({ op: 'attach', name: 'w2', id: started.id!, from: 0, read: { untilEnd: true, ms: 10_000 } });
  assert.is(attached.error, undefined, attached.message);
  assert.is(attached.bytes, 4, JSON.stringify(attached));
  const end = attached.end as { reason: string; result: string } | undefined;
  assert.equal([end?.reason, end?.result], ['exit', 'timeout'], JSON.stringify(attached));
  await until(async () => (await listed(started.id!)) === undefined && (await sessionUnits(sandbox)).length === 0, 10_000, 'the session and its unit gone after its EXIT');
});

test.run();
