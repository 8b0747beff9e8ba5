// A kept session whose wall clock (protocol version 4's budget, RuntimeMaxSec=) runs out while nobody is
// attached: systemd stops its whole unit, the session helper and its ring with it, so the end is root's
// to keep (issue 32: "a kept session that ends by OOM or timeout while detached still gives its EXIT on
// attach"). LIST shows it ended, and the next ATTACH gets its EXIT with result `timeout`: today only while
// systemd still waits for the helper (TimeoutStopSec=), not after.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, sessionUnits } from '../support/supervisor.ts';
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
const listed = async (id: number) => ((await agent.keep({ op: 'list' })).list as Listed[]).find((one) => one.id === id);

// Skipped: the product does not do this yet (it fails at "still listed"). RuntimeMaxSec= makes systemd
// SIGTERM and SIGHUP every process of the unit; the helper catches SIGTERM and holds its ring (an ATTACH
// then still gets the end: the next test), and systemd SIGKILLs it TimeoutStopSec= later (the worker's
// journal: "the session helper ended without a report; closing without a last frame", then "ended: error
// (code 2 status 9 result timeout)"). With no connection attached the worker writes no last frame, drops
// the session's record and ends: LIST no longer has it, ATTACH is NO_SESSION. What is missing: the worker
// keeping such an end itself (the unit's Result, memory.events) past its unit, and answering LIST (state
// ended), ATTACH (ATTACHED, then EXIT; no replay, the ring went with the helper) and STOP_SESSION (STOPPED
// with that end).
test.skip('a kept session whose wall clock passes while detached: listed as ended, and an ATTACH gets its EXIT with result timeout', async () => {
  const started = await agent.keep({ op: 'start', name: 't1', argv: ['sh', '-c', 'echo up; exec sleep 600'], keepMs: 120_000, budgets: { timeMs: 2000 }, read: { bytes: 4 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 't1' });
  // systemd stops the unit at its RuntimeMaxSec=, with nobody attached.
  await until(async () => (await sessionUnits(sandbox)).length === 0, (STOP_TIMEOUT_SEC + 15) * 1000, 'the unit stopped by its wall clock');
  const entry = await listed(started.id!);
  assert.ok(entry, 'the session is still listed once its unit is gone');
  assert.is(entry!.state, 'ended', JSON.stringify(entry));
  const attached = await agent.keep({ op: 'attach', name: 't2', id: started.id!, from: 0, read: { untilEnd: true, ms: 10_000 } });
  assert.is(attached.error, undefined, attached.message);
  const end = attached.end as { reason: string; result: string } | undefined;
  assert.equal([end?.reason, end?.result], ['exit', 'timeout'], JSON.stringify(attached));
  await until(async () => (await listed(started.id!)) === undefined, 10_000, 'the session gone after its EXIT');
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
