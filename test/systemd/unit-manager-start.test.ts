// UnitManager.startSession against a scripted bus: the helper's PID comes from the unit's change
// signals when systemd sent them before JobRemoved (as it does), else from one property read.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import dbus from 'dbus-next';
import { openSync, closeSync } from 'node:fs';
import { UnitManager } from '../../src/systemd/unit-manager.ts';
import type { SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { FakeBus } from './fake-bus.ts';

const NAME = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const UNIT_PATH = `/org/freedesktop/systemd1/unit/${NAME.replace(/[^A-Za-z0-9]/g, (c) => `_${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}`;
const JOB_PATH = '/org/freedesktop/systemd1/job/42';

function spec(fd: number): SessionUnitSpec {
  return { description: 'opencode-pty session sh', helperPath: '/bin/true', helperArgs: [], user: 'agent', group: 'agent', cwdFd: fd, stdoutFd: fd, environment: {}, stopTimeoutSec: 5 };
}

/** Answers Subscribe, and StartTransientUnit with its job, then sends what systemd sends after it. */
async function scriptedBus(afterStart: (bus: FakeBus) => void): Promise<FakeBus> {
  const bus = await FakeBus.start();
  bus.replies.set('Subscribe', (call) => bus.methodReturn(call));
  bus.replies.set('StartTransientUnit', (call) => {
    setImmediate(() => afterStart(bus));
    return bus.methodReturn(call, 'o', [JOB_PATH]);
  });
  return bus;
}

function serviceChanged(bus: FakeBus, changed: Record<string, InstanceType<typeof dbus.Variant>>): void {
  bus.signal(UNIT_PATH, 'org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as', ['org.freedesktop.systemd1.Service', changed, []]);
}

function jobRemoved(bus: FakeBus): void {
  bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'JobRemoved', 'uoss', [42, JOB_PATH, NAME, 'done']);
}

async function started(bus: FakeBus): Promise<number> {
  const fd = openSync('/dev/null', 'r');
  const manager = await UnitManager.connect(bus.address, { timeoutMs: 2000 });
  try {
    return (await manager.startSession(NAME, spec(fd))).mainPid;
  } finally {
    manager.close();
    closeSync(fd);
  }
}

test('ExecMainPID from the change signals before JobRemoved: no property read', async () => {
  const bus = await scriptedBus((b) => {
    serviceChanged(b, { ExecMainPID: new dbus.Variant('u', 4321), MainPID: new dbus.Variant('u', 4321) });
    jobRemoved(b);
  });
  try {
    assert.is(await started(bus), 4321);
    assert.not.ok(bus.calls.some((call) => call.member === 'Get'), bus.calls.map((call) => call.member).join(' '));
  } finally {
    await bus.stop();
  }
});

test('without it (or with a PID of 0) the PID is read once after JobRemoved', async () => {
  const bus = await scriptedBus((b) => {
    serviceChanged(b, { ExecMainPID: new dbus.Variant('u', 0) });
    jobRemoved(b);
  });
  bus.replies.set('Get', (call) => bus.methodReturn(call, 'v', [new dbus.Variant('u', 777)]));
  try {
    assert.is(await started(bus), 777);
    assert.is(bus.calls.filter((call) => call.member === 'Get').length, 1);
  } finally {
    await bus.stop();
  }
});

test.run();
