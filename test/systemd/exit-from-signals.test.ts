// A started unit's state and end from its own change signals (the Service signal, then the Unit signal
// of the same change), and the watch that takes them without reading the unit.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import dbus from 'dbus-next';
import { closeSync, openSync } from 'node:fs';
import type { SystemdSignal } from '../../src/systemd/dbus-connection.ts';
import { UnitSignals } from '../../src/systemd/exit-from-signals.ts';
import { UnitManager } from '../../src/systemd/unit-manager.ts';
import { unitObjectPath } from '../../src/systemd/unit-names.ts';
import type { SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { FakeBus } from './fake-bus.ts';

const NAME = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const PATH = unitObjectPath(NAME);
const SERVICE = 'org.freedesktop.systemd1.Service';
const UNIT = 'org.freedesktop.systemd1.Unit';

const changed = (iface: string, values: Record<string, unknown>, path = PATH): SystemdSignal => ({ kind: 'properties-changed', path, interface: iface, changed: values, invalidated: [] });
const service = (code: number, status: number, result: string) => changed(SERVICE, { MainPID: 0, ExecMainCode: code, ExecMainStatus: status, Result: result });
const unit = (activeState: string, jobId = 0) => changed(UNIT, { ActiveState: activeState, SubState: 'dead', Job: [jobId, jobId ? `/org/freedesktop/systemd1/job/${jobId}` : '/'] });

test('inactive or failed with no job, right after the Service signal: its exit', () => {
  const signals = new UnitSignals(PATH);
  const feed = (signal: SystemdSignal) => signals.feed(signal);
  assert.is(feed(service(1, 0, 'success')), undefined);
  assert.equal(feed(unit('inactive')), { code: 1, status: 0, result: 'success' });
  assert.not.ok(signals.running);
  feed(unit('active'));
  assert.equal(signals.exit, { code: 1, status: 0, result: 'success' }, 'an end is final');
  const failed = new UnitSignals(PATH);
  failed.feed(service(2, 9, 'signal'));
  assert.equal(failed.feed(unit('failed')), { code: 2, status: 9, result: 'signal' });
});

test('still running, or a job pending on it: nothing decided', () => {
  const signals = new UnitSignals(PATH);
  const feed = (signal: SystemdSignal) => signals.feed(signal);
  for (const state of [unit('active'), unit('deactivating'), unit('inactive', 57), unit('activating', 50)]) {
    feed(service(0, 0, 'success'));
    assert.is(feed(state), undefined, JSON.stringify(state));
    assert.ok(signals.running, 'known to run');
  }
  feed(changed(UNIT, { ActiveState: 'inactive' }));
  assert.not.ok(signals.running, 'a state without its job is not known');
});

test("a Service signal counts for the next Unit signal only, and only with all three figures", () => {
  const signals = new UnitSignals(PATH);
  const feed = (signal: SystemdSignal) => signals.feed(signal);
  feed(service(1, 0, 'success'));
  feed(unit('active'));
  assert.is(feed(unit('inactive')), undefined, 'the Service signal belonged to the change before');
  feed(changed(SERVICE, { ExecMainCode: 1, Result: 'success' }));
  assert.is(feed(unit('inactive')), undefined, 'no ExecMainStatus');
  feed(service(1, 0, 'success'));
  assert.is(feed(changed(UNIT, { ActiveState: 'inactive' })), undefined, 'no Job');
});

test('systemd reconnected (a re-exec, whose own changes reached no one): nothing known runs, and a Service signal before it counts for nothing', () => {
  const signals = new UnitSignals(PATH);
  signals.feed(unit('active'));
  assert.ok(signals.running);
  signals.feed(service(1, 0, 'success'));
  signals.feed({ kind: 'systemd-reconnected', owner: ':1.9' });
  assert.not.ok(signals.running, 'the next watch reads');
  assert.is(signals.feed(unit('inactive')), undefined, 'no exit without its Service signal');
});

test('signals of another unit, other interfaces and other kinds are ignored', () => {
  const signals = new UnitSignals(PATH);
  const feed = (signal: SystemdSignal) => signals.feed(signal);
  feed(service(1, 0, 'success'));
  assert.is(feed(changed(UNIT, { ActiveState: 'inactive', Job: [0, '/'] }, unitObjectPath('other.service'))), undefined);
  assert.is(feed(changed('org.freedesktop.systemd1.Scope', { ActiveState: 'inactive', Job: [0, '/'] })), undefined);
  assert.is(feed({ kind: 'unit-removed', unit: NAME, path: PATH }), undefined);
  assert.equal(feed(unit('inactive')), { code: 1, status: 0, result: 'success' }, 'the Service signal still pairs');
});

function spec(fd: number): SessionUnitSpec {
  return { description: 'opencode-pty session sh', helperPath: '/bin/true', helperArgs: [], user: 'agent', group: 'agent', cwdFd: fd, stdoutFd: fd, environment: {}, stopTimeoutSec: 5 };
}

function emit(bus: FakeBus, iface: string, values: Record<string, InstanceType<typeof dbus.Variant>>): void {
  bus.signal(PATH, 'org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as', [iface, values, []]);
}

/** Resolves when `count` calls of `member` have reached the bus (bounded: a hang fails the test). */
async function calls(bus: FakeBus, member: string, count: number): Promise<void> {
  for (let turn = 0; bus.calls.filter((call) => call.member === member).length < count; turn += 1) {
    if (turn > 5000) throw new Error(`only ${bus.calls.filter((call) => call.member === member).length} ${member} calls`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const JOB = '/org/freedesktop/systemd1/job/42';
const RUNNING: Record<string, InstanceType<typeof dbus.Variant>> = {
  LoadState: new dbus.Variant('s', 'loaded'),
  ActiveState: new dbus.Variant('s', 'active'),
  Job: new dbus.Variant('(uo)', [0, '/']),
  ExecMainCode: new dbus.Variant('i', 0),
  ExecMainStatus: new dbus.Variant('i', 0),
  Result: new dbus.Variant('s', 'success'),
};

/** A bus that starts the unit with the signals systemd sends (the Unit one saying active when `withState`),
 * answers reads as a running unit until told not to, and lists no units (an answered call to sync on). */
async function startingBus(withState: boolean): Promise<FakeBus> {
  const bus = await FakeBus.start();
  bus.replies.set('Subscribe', (call) => bus.methodReturn(call));
  bus.replies.set('ListUnitsByPatterns', (call) => bus.methodReturn(call, 'a(ssssssouso)', [[]]));
  bus.replies.set('StartTransientUnit', (call) => {
    setImmediate(() => {
      emit(bus, SERVICE, { ExecMainPID: new dbus.Variant('u', 4321), ExecMainCode: new dbus.Variant('i', 0), ExecMainStatus: new dbus.Variant('i', 0), Result: new dbus.Variant('s', 'success') });
      if (withState) emit(bus, UNIT, { ActiveState: new dbus.Variant('s', 'active'), Job: new dbus.Variant('(uo)', [0, '/']) });
      bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'JobRemoved', 'uoss', [42, JOB, NAME, 'done']);
    });
    return bus.methodReturn(call, 'o', [JOB]);
  });
  bus.replies.set('Get', (call) => bus.methodReturn(call, 'v', [RUNNING[Object.keys(RUNNING).find((name) => call.text.includes(`${name}\0`))!]]));
  return bus;
}

/** Starts the unit, waits for its exit while the bus answers no read after `reads` of them, and ends it by signals. */
async function endBySignals(bus: FakeBus, reads: number, after?: (manager: UnitManager) => Promise<void>): Promise<unknown> {
  const fd = openSync('/dev/null', 'r');
  const manager = await UnitManager.connect(bus.address, { timeoutMs: 60_000 });
  try {
    await manager.startSession(NAME, spec(fd));
    const exit = manager.waitForExit(NAME);
    await calls(bus, 'Get', reads);
    // A call answered after the first look's has that look done (the bus handles calls in order).
    await manager.listUnitsByPrefix('opencode-pty-');
    // From here no read is ever answered: only the signals can end the wait.
    bus.replies.delete('Get');
    emit(bus, SERVICE, { MainPID: new dbus.Variant('u', 0), ExecMainCode: new dbus.Variant('i', 1), ExecMainStatus: new dbus.Variant('i', 3), Result: new dbus.Variant('s', 'exit-code') });
    emit(bus, UNIT, { ActiveState: new dbus.Variant('s', 'failed'), SubState: new dbus.Variant('s', 'failed'), Job: new dbus.Variant('(uo)', [0, '/']) });
    const bound = new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000).unref());
    const result = await Promise.race([exit, bound]);
    // Every call before this one has reached the bus.
    await manager.listUnitsByPrefix('opencode-pty-');
    await after?.(manager);
    return result;
  } finally {
    manager.close();
    closeSync(fd);
  }
}

const reads = (bus: FakeBus) => bus.calls.filter((call) => call.member === 'Get' || call.member === '?').length;

test('waitForExit of a unit whose start signals said it runs reads nothing, and ends on its signals', async () => {
  const bus = await startingBus(true);
  try {
    assert.equal(await endBySignals(bus, 0), { code: 1, status: 3, result: 'exit-code' });
    assert.is(reads(bus), 0, bus.calls.map((call) => call.member).join(' '));
  } finally {
    await bus.stop();
  }
});

test('without a state in its start signals, one first look; none for the signals of its end', async () => {
  const bus = await startingBus(false);
  try {
    assert.equal(await endBySignals(bus, 6), { code: 1, status: 3, result: 'exit-code' });
    // Nor was a read asked for on the Service signal: the Unit signal was known to follow.
    assert.is(reads(bus), 6, bus.calls.map((call) => call.member).join(' '));
  } finally {
    await bus.stop();
  }
});

test('a unit its signals saw finished is released with no read first: reset (it failed), unref, then gone', async () => {
  const bus = await startingBus(true);
  bus.replies.set('ResetFailedUnit', (call) => bus.methodReturn(call));
  bus.replies.set('UnrefUnit', (call) => bus.methodReturn(call));
  bus.replies.set('GetUnit', (call) => bus.error(call, 'org.freedesktop.systemd1.NoSuchUnit', 'not loaded'));
  try {
    await endBySignals(bus, 0, async (manager) => {
      const before = bus.calls.length;
      await manager.stopAndWait(NAME, 10_000);
      assert.equal(bus.calls.slice(before).map((call) => call.member), ['ResetFailedUnit', 'UnrefUnit', 'GetUnit']);
    });
  } finally {
    await bus.stop();
  }
});

test.run();
