// readServiceState: a service seen loaded before has its properties asked for in GetUnit's round trip,
// on the path its name gives; one never seen loaded is read after GetUnit's answer, as before.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DbusConnection } from '../../src/systemd/dbus-connection.ts';
import { DbusErrorName, SystemdError } from '../../src/systemd/errors.ts';
import { unitObjectPath } from '../../src/systemd/unit-names.ts';
import { readServiceState } from '../../src/systemd/unit-state.ts';
import { deferred } from '../deferred.ts';

const UNIT = 'agent.service';
const VALUES: Record<string, unknown> = {
  ActiveState: 'active',
  SubState: 'running',
  InvocationID: Buffer.alloc(16, 7),
  MainPID: 42,
  ControlGroup: '/system.slice/agent.service',
};

/** A connection whose GetUnit the test answers; property reads answer at once and are recorded with
 * whether GetUnit had been answered when they were sent. */
function connection() {
  const getUnit = deferred<unknown[]>();
  let answered = false;
  const reads: { path: string; name: string; afterGetUnit: boolean }[] = [];
  const fake = {
    call: () => getUnit.promise.then((body) => ((answered = true), body)),
    getProperty: async (path: string, _iface: string, name: string) => {
      reads.push({ path, name, afterGetUnit: answered });
      if (path !== unitObjectPath(UNIT)) throw new SystemdError('DBUS_ERROR', 'unknown object', { dbusName: DbusErrorName.UNKNOWN_OBJECT });
      return VALUES[name];
    },
  } as unknown as DbusConnection;
  return { fake, getUnit, reads, answer: (body: unknown[]) => getUnit.resolve(body), refuse: (error: Error) => getUnit.reject(error) };
}

test('never seen loaded: the properties are read after GetUnit answered', async () => {
  const { fake, reads, answer } = connection();
  const state = readServiceState(fake, UNIT);
  await new Promise(setImmediate);
  assert.is(reads.length, 0, 'nothing read before GetUnit answered');
  answer([unitObjectPath(UNIT)]);
  assert.is((await state).mainPid, 42);
  assert.ok(reads.length === 5 && reads.every((read) => read.afterGetUnit));
});

test('seen loaded: the five reads go out with GetUnit, on the path the name gives, and are its answer', async () => {
  const { fake, reads, answer } = connection();
  const state = readServiceState(fake, UNIT, true);
  await new Promise(setImmediate);
  assert.equal(reads.map((read) => read.name).sort(), ['ActiveState', 'ControlGroup', 'InvocationID', 'MainPID', 'SubState']);
  assert.ok(reads.every((read) => !read.afterGetUnit && read.path === unitObjectPath(UNIT)), 'sent before GetUnit answered');
  answer([unitObjectPath(UNIT)]);
  const result = await state;
  assert.equal(result, { activeState: 'active', subState: 'running', mainPid: 42, controlGroup: '/system.slice/agent.service', invocationId: Buffer.alloc(16, 7) });
  assert.is(reads.length, 5, 'no second read');
});

test('seen loaded, unloaded since: GetUnit decides (NO_SUCH_UNIT), and the early reads leave no unhandled rejection', async () => {
  const { fake, refuse } = connection();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const state = readServiceState(fake, UNIT, true);
  refuse(new SystemdError('DBUS_ERROR', 'not loaded', { dbusName: DbusErrorName.NO_SUCH_UNIT }));
  const error = await state.catch((e: SystemdError) => e);
  await new Promise(setImmediate);
  process.off('unhandledRejection', onUnhandled);
  assert.is((error as SystemdError).code, 'NO_SUCH_UNIT');
  assert.equal(unhandled, []);
});

test('seen loaded, and GetUnit names another path: read again there', async () => {
  const { fake, reads, answer } = connection();
  const state = readServiceState(fake, UNIT, true);
  answer(['/org/freedesktop/systemd1/unit/elsewhere']);
  const error = await state.catch((e: SystemdError) => e);
  assert.is((error as SystemdError).dbusName, DbusErrorName.UNKNOWN_OBJECT, 'the answer came from the path GetUnit gave');
  assert.ok(reads.some((read) => read.path === '/org/freedesktop/systemd1/unit/elsewhere'));
});

test.run();
