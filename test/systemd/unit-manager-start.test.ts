// UnitManager against a scripted bus: the helper's PID comes from the unit's change signals when
// systemd sent them before JobRemoved (as it does), else from one property read; a unit seen
// finished is released without a stop job.
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

function jobRemoved(bus: FakeBus, result = 'done'): void {
  bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'JobRemoved', 'uoss', [42, JOB_PATH, NAME, result]);
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

/** A loaded, finished unit until UnrefUnit, then gone; properties answered by name. */
function finishedUnit(bus: FakeBus, status = 0): void {
  let loaded = true;
  const values: Record<string, InstanceType<typeof dbus.Variant>> = {
    LoadState: new dbus.Variant('s', 'loaded'),
    ActiveState: new dbus.Variant('s', status === 0 ? 'inactive' : 'failed'),
    Job: new dbus.Variant('(uo)', [0, '/']),
    ExecMainCode: new dbus.Variant('i', 1),
    ExecMainStatus: new dbus.Variant('i', status),
    Result: new dbus.Variant('s', status === 0 ? 'success' : 'exit-code'),
  };
  bus.replies.set('Get', (call) => {
    const name = Object.keys(values).find((property) => call.text.includes(`${property}\0`));
    if (!loaded || !name) return bus.error(call, 'org.freedesktop.DBus.Error.UnknownObject', 'gone');
    return bus.methodReturn(call, 'v', [values[name]]);
  });
  bus.replies.set('GetUnit', (call) => (loaded ? bus.methodReturn(call, 'o', [UNIT_PATH]) : bus.error(call, 'org.freedesktop.systemd1.NoSuchUnit', 'not loaded')));
  bus.replies.set('StopUnit', (call) => bus.methodReturn(call, 'o', ['/org/freedesktop/systemd1/job/43']));
  bus.replies.set('ResetFailedUnit', (call) => bus.methodReturn(call));
  bus.replies.set('UnrefUnit', (call) => {
    loaded = false;
    return bus.methodReturn(call);
  });
}

test('a unit waitForExit saw finished is released without a stop job; one not seen so gets StopUnit', async () => {
  const bus = await scriptedBus((b) => {
    serviceChanged(b, { ExecMainPID: new dbus.Variant('u', 4321) });
    jobRemoved(b);
  });
  finishedUnit(bus);
  const fd = openSync('/dev/null', 'r');
  const manager = await UnitManager.connect(bus.address, { timeoutMs: 2000 });
  try {
    await manager.startSession(NAME, spec(fd));
    assert.equal(await manager.waitForExit(NAME), { code: 1, status: 0, result: 'success' });
    await manager.stopAndWait(NAME, 2000);
    const members = bus.calls.map((call) => call.member);
    assert.ok(members.includes('UnrefUnit'), members.join(' '));
    assert.not.ok(members.includes('StopUnit'), members.join(' '));
    // Not watched to its end here: the stop job is asked for.
    finishedUnit(bus);
    await manager.stopAndWait(NAME, 2000);
    assert.ok(bus.calls.some((call) => call.member === 'StopUnit'));
  } finally {
    manager.close();
    closeSync(fd);
    await bus.stop();
  }
});

test('a start job "failed" by a program that ran and exited at once counts as started; an exit with systemd\'s own code does not', async () => {
  for (const [status, startedOk] of [[7, true], [199, true], [203, false], [244, false], [255, false]] as const) {
    const bus = await scriptedBus((b) => {
      serviceChanged(b, { ExecMainPID: new dbus.Variant('u', 99) });
      jobRemoved(b, 'failed');
    });
    finishedUnit(bus, status);
    try {
      if (startedOk) assert.is(await started(bus), 99);
      else {
        try {
          await started(bus);
          assert.unreachable(`exit ${status} (one of systemd's codes) is a failed start`);
        } catch (error) {
          assert.is((error as { code?: string }).code, 'UNIT_START_FAILED');
          assert.equal((error as { exit?: unknown }).exit, { code: 1, status, result: 'exit-code' });
        }
      }
    } finally {
      await bus.stop();
    }
  }
});

test("a started unit's properties are read on its path, without GetUnit first", async () => {
  const bus = await scriptedBus((b) => {
    serviceChanged(b, { ExecMainPID: new dbus.Variant('u', 4321) });
    jobRemoved(b);
  });
  finishedUnit(bus);
  const fd = openSync('/dev/null', 'r');
  const manager = await UnitManager.connect(bus.address, { timeoutMs: 2000 });
  try {
    await manager.startSession(NAME, spec(fd));
    assert.equal(await manager.unitProperties(NAME, { service: ['ExecMainStatus'] }), { ExecMainStatus: 0 });
    assert.not.ok(bus.calls.some((call) => call.member === 'GetUnit'), bus.calls.map((call) => call.member).join(' '));
  } finally {
    manager.close();
    closeSync(fd);
    await bus.stop();
  }
});

// Once `progress.forked` has been heard the caller may have written STARTED and run the session: the
// unit is the caller's to end (the worker's session stops it in its clean-up whatever happened). A
// job wait that fails after that (here JobRemoved not within startTimeoutMs; likewise a job our own
// stop cancelled) must not stop the unit from under the running session.
test('after the fork was announced, a start job that fails later does not stop the unit: the caller runs it', async () => {
  const bus = await scriptedBus((b) => serviceChanged(b, { ExecMainPID: new dbus.Variant('u', 4321) }));
  finishedUnit(bus);
  const fd = openSync('/dev/null', 'r');
  const manager = await UnitManager.connect(bus.address, { timeoutMs: 2000, startTimeoutMs: 300 });
  let forked: number | undefined;
  let forkedAt = -1;
  try {
    const error = await manager.startSession(NAME, spec(fd), {
      forked: (pid) => {
        forked = pid;
        forkedAt = bus.calls.length;
      },
    }).then(
      () => undefined,
      (failure: { code?: string }) => failure,
    );
    assert.is(error?.code, 'UNIT_START_FAILED', 'the job wait still fails');
    assert.is(forked, 4321);
    const after = bus.calls.slice(forkedAt).map((call) => call.member);
    assert.not.ok(after.some((member) => member === 'StopUnit' || member === 'UnrefUnit' || member === 'ResetFailedUnit'), after.join(' '));
  } finally {
    manager.close();
    closeSync(fd);
    await bus.stop();
  }
});

test.run();
