// A referenced unit's end from its own change signals (the Service signal, then the Unit signal of
// the same change), and the watch that takes it without reading the unit after them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import dbus from 'dbus-next';
import { closeSync, openSync } from 'node:fs';
import type { SystemdSignal } from '../../src/systemd/dbus-connection.ts';
import { signalledExit } from '../../src/systemd/exit-from-signals.ts';
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
  const feed = signalledExit(PATH);
  assert.is(feed(service(1, 0, 'success')), undefined);
  assert.equal(feed(unit('inactive')), { code: 1, status: 0, result: 'success' });
  const failed = signalledExit(PATH);
  failed(service(2, 9, 'signal'));
  assert.equal(failed(unit('failed')), { code: 2, status: 9, result: 'signal' });
});

test('still running, or a job pending on it: nothing decided', () => {
  const feed = signalledExit(PATH);
  for (const state of [unit('active'), unit('deactivating'), unit('inactive', 57), unit('activating', 50)]) {
    feed(service(0, 0, 'success'));
    assert.is(feed(state), undefined, JSON.stringify(state));
  }
});

test("a Service signal counts for the next Unit signal only, and only with all three figures", () => {
  const feed = signalledExit(PATH);
  feed(service(1, 0, 'success'));
  feed(unit('active'));
  assert.is(feed(unit('inactive')), undefined, 'the Service signal belonged to the change before');
  feed(changed(SERVICE, { ExecMainCode: 1, Result: 'success' }));
  assert.is(feed(unit('inactive')), undefined, 'no ExecMainStatus');
  feed(service(1, 0, 'success'));
  assert.is(feed(changed(UNIT, { ActiveState: 'inactive' })), undefined, 'no Job');
});

test('signals of another unit, other interfaces and other kinds are ignored', () => {
  const feed = signalledExit(PATH);
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

test('waitForExit of a started unit ends on its signals, with no read for them', async () => {
  const bus = await FakeBus.start();
  const job = '/org/freedesktop/systemd1/job/42';
  bus.replies.set('Subscribe', (call) => bus.methodReturn(call));
  bus.replies.set('StartTransientUnit', (call) => {
    setImmediate(() => {
      emit(bus, SERVICE, { ExecMainPID: new dbus.Variant('u', 4321) });
      bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'JobRemoved', 'uoss', [42, job, NAME, 'done']);
    });
    return bus.methodReturn(call, 'o', [job]);
  });
  // The watch's first look sees the unit running.
  const running: Record<string, InstanceType<typeof dbus.Variant>> = {
    LoadState: new dbus.Variant('s', 'loaded'),
    ActiveState: new dbus.Variant('s', 'active'),
    Job: new dbus.Variant('(uo)', [0, '/']),
    ExecMainCode: new dbus.Variant('i', 0),
    ExecMainStatus: new dbus.Variant('i', 0),
    Result: new dbus.Variant('s', 'success'),
  };
  bus.replies.set('Get', (call) => bus.methodReturn(call, 'v', [running[Object.keys(running).find((name) => call.text.includes(`${name}\0`))!]]));
  const fd = openSync('/dev/null', 'r');
  const manager = await UnitManager.connect(bus.address, { timeoutMs: 60_000 });
  try {
    await manager.startSession(NAME, spec(fd));
    const exit = manager.waitForExit(NAME);
    await calls(bus, 'Get', 6);
    // A call answered after the first look's has that look done (the bus handles calls in order).
    bus.replies.set('ListUnitsByPatterns', (call) => bus.methodReturn(call, 'a(ssssssouso)', [[]]));
    await manager.listUnitsByPrefix('opencode-pty-');
    // From here no read is ever answered: only the signals can end the wait.
    bus.replies.delete('Get');
    emit(bus, SERVICE, { MainPID: new dbus.Variant('u', 0), ExecMainCode: new dbus.Variant('i', 1), ExecMainStatus: new dbus.Variant('i', 3), Result: new dbus.Variant('s', 'exit-code') });
    emit(bus, UNIT, { ActiveState: new dbus.Variant('s', 'failed'), SubState: new dbus.Variant('s', 'failed'), Job: new dbus.Variant('(uo)', [0, '/']) });
    const bound = new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000).unref());
    assert.equal(await Promise.race([exit, bound]), { code: 1, status: 3, result: 'exit-code' });
    // Nor was a read asked for on the Service signal: the Unit signal was known to follow.
    await manager.listUnitsByPrefix('opencode-pty-');
    assert.is(bus.calls.filter((call) => call.member === 'Get' || call.member === '?').length, 6, bus.calls.map((call) => call.member).join(' '));
  } finally {
    manager.close();
    closeSync(fd);
    await bus.stop();
  }
});

test.run();
