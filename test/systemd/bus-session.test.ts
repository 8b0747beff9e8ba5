// A bus that goes away and comes back: calls wait and go on, unit watches are taken up again.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BusSession, type Connected } from '../../src/systemd/bus-session.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import type { ExitStatus } from '../../src/systemd/unit-watch.ts';
import type { LogLevel } from '../../src/log.ts';

const EXIT: ExitStatus = { code: 1, status: 0, result: 'success' };

/** A connection whose loss and whose unit's end the test decides. */
class FakeConnection {
  closeListeners = new Set<(error: SystemdError) => void>();
  watchers = new Set<{ resolve: (exit: ExitStatus) => void; reject: (error: Error) => void }>();
  refs: string[] = [];
  refError: Error | undefined;
  callError: Error | undefined;
  calls: string[] = [];
  constructor(readonly id: number) {}
  closed = false;
  lose(): void {
    this.closed = true;
    const error = new SystemdError('DBUS_CLOSED', 'D-Bus connection closed by the bus');
    for (const watcher of this.watchers) watcher.reject(error);
    for (const listener of this.closeListeners) listener(error);
  }
  asConnected(): Connected {
    const fake = this;
    return {
      async startSession() {
        throw new Error('not used');
      },
      waitForExit: () => new Promise<ExitStatus>((resolve, reject) => fake.watchers.add({ resolve, reject })),
      async kill(name) {
        fake.calls.push(`kill ${name}`);
      },
      async stopAndWait(name) {
        fake.calls.push(`stop ${name}`);
      },
      async listUnitsByPrefix() {
        if (fake.callError) throw fake.callError;
        fake.calls.push('list');
        return ['u.service'];
      },
      async serviceState() {
        throw new Error('not used');
      },
      close() {
        if (!fake.closed) fake.lose();
      },
      async ref(name) {
        if (fake.refError) throw fake.refError;
        fake.refs.push(name);
      },
      onClose(listener) {
        fake.closeListeners.add(listener);
        return () => fake.closeListeners.delete(listener);
      },
    };
  }
}

function setup(failFirst = 0) {
  const connections: FakeConnection[] = [];
  let failures = failFirst;
  let connected: () => void = () => undefined;
  const lines: string[] = [];
  const connect = async () => {
    if (connections.length > 0 && failures-- > 0) throw new SystemdError('DBUS_CONNECT_FAILED', 'no bus yet');
    const connection = new FakeConnection(connections.length);
    connections.push(connection);
    queueMicrotask(connected);
    return connection.asConnected();
  };
  const nextConnection = () => new Promise<void>((resolve) => (connected = resolve));
  const log = (level: LogLevel, message: string) => lines.push(`${level}: ${message}`);
  return { connections, connect, nextConnection, lines, log };
}

/** A session whose exit watch on u.service was cut by the first connection's loss, the second one made. */
async function watchCutByLoss() {
  const fixture = setup();
  const bus = await BusSession.open(fixture.connect, fixture.log, { waitMs: 5000, firstDelayMs: 1 });
  const exit = bus.waitForExit('u.service');
  await Promise.resolve();
  const back = fixture.nextConnection();
  fixture.connections[0]!.lose();
  await back;
  return { ...fixture, bus, exit };
}

test('a call during the outage waits for the new connection; listeners hear of it; two log lines', async () => {
  const { connections, connect, lines, log } = setup(2);
  const bus = await BusSession.open(connect, log, { waitMs: 5000, firstDelayMs: 1, maxDelayMs: 4 });
  let reconnected = 0;
  bus.onReconnect(() => (reconnected += 1));
  connections[0]!.lose();
  assert.not.ok(bus.connected);
  assert.equal(await bus.listUnitsByPrefix('p-'), ['u.service']);
  assert.is(connections.length, 2);
  assert.equal(connections[1]!.calls, ['list']);
  assert.is(reconnected, 1);
  assert.is(lines.length, 2);
  assert.match(lines[0]!, /^warning: D-Bus connection lost \(D-Bus connection closed by the bus\); reconnecting/);
  assert.match(lines[1]!, /^notice: D-Bus connection back after 3 attempts/);
  bus.close();
});

test('an exit watch cut by the loss is taken up on the new connection with a fresh reference', async () => {
  const { connections, bus, exit } = await watchCutByLoss();
  // Let the watcher re-attach, then end the unit on the new connection.
  while (connections[1]!.watchers.size === 0) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(connections[1]!.refs, ['u.service']);
  for (const watcher of connections[1]!.watchers) watcher.resolve(EXIT);
  assert.equal(await exit, EXIT);
  bus.close();
});

test('a unit collected during the outage ends its watch with a clear error', async () => {
  const { connections, bus, exit } = await watchCutByLoss();
  connections[1]!.refError = new SystemdError('DBUS_ERROR', 'Unit u.service not loaded.', { dbusName: 'org.freedesktop.systemd1.NoSuchUnit' });
  try {
    await exit;
    assert.unreachable('the watch went on');
  } catch (error) {
    assert.is((error as SystemdError).code, 'NO_SUCH_UNIT');
    assert.match((error as Error).message, 'ended while the D-Bus connection was lost; its exit status is unknown');
  }
  bus.close();
});

test('a connection made mid-restart that systemd is not on is dropped for another; the watch goes on', async () => {
  const { connections, nextConnection, bus, exit } = await watchCutByLoss();
  // The bus answers for systemd's name: it has left this daemon (or is not on the new one yet).
  connections[1]!.refError = new SystemdError('DBUS_ERROR', 'The name org.freedesktop.systemd1 was not provided by any .service files', { dbusName: 'org.freedesktop.DBus.Error.ServiceUnknown' });
  // Before the fix the watch ended here, as for a unit gone ("ended while the D-Bus connection was lost").
  let early: unknown;
  exit.catch((error: unknown) => (early = error));
  const back = nextConnection();
  await Promise.race([back, exit.catch(() => undefined)]);
  while (connections[2]?.watchers.size !== 1 && early === undefined) await new Promise((resolve) => setImmediate(resolve));
  assert.is(early, undefined, String(early));
  assert.ok(connections[1]!.closed, 'the useless connection was closed');
  assert.equal(connections[2]!.refs, ['u.service']);
  for (const watcher of connections[2]!.watchers) watcher.resolve(EXIT);
  assert.equal(await exit, EXIT);
  bus.close();
});

test('a bus that systemd never comes back to ends the watch after the wait, with growing delays, not a connection every turn', async () => {
  const { connections, connect, lines, log } = setup();
  const absent = () => new SystemdError('DBUS_ERROR', 'The name org.freedesktop.systemd1 was not provided by any .service files', { dbusName: 'org.freedesktop.DBus.Error.ServiceUnknown' });
  const connectAbsent = async () => {
    const made = await connect();
    if (connections.length > 1) connections.at(-1)!.refError = absent();
    return made;
  };
  const bus = await BusSession.open(connectAbsent, log, { waitMs: 60, firstDelayMs: 1, maxDelayMs: 8 });
  const exit = bus.waitForExit('u.service');
  await Promise.resolve();
  connections[0]!.lose();
  // Before the fix the watch never ended: a bounded wait for it says so instead of hanging the file.
  const ended = await Promise.race([exit.then(() => 'exit', (error: Error) => error), new Promise((resolve) => setTimeout(() => resolve('still watching'), 2000))]);
  assert.instance(ended, SystemdError);
  assert.match((ended as Error).message, /systemd was not on the D-Bus for 60 ms/);
  // Delays of 1, 2, 4 and then 8 ms over 60 ms: about a dozen connections, not hundreds.
  assert.ok(connections.length <= 16, `${connections.length} connections, ${lines.length} log lines`);
  bus.close();
});

test('a call answered "systemd is not on this bus" is made again on a new connection', async () => {
  const { connections, connect, log } = setup();
  const bus = await BusSession.open(connect, log, { waitMs: 5000, firstDelayMs: 1 });
  connections[0]!.callError = new SystemdError('DBUS_ERROR', 'Could not activate remote peer.', { dbusName: 'org.freedesktop.DBus.Error.NameHasNoOwner' });
  assert.equal(await bus.listUnitsByPrefix('p-'), ['u.service']);
  assert.ok(connections[0]!.closed);
  assert.equal(connections[1]!.calls, ['list']);
  bus.close();
});

test('a bus that stays away fails calls after the wait, and the session keeps trying', async () => {
  const { connections, connect, log } = setup(1_000_000);
  const bus = await BusSession.open(connect, log, { waitMs: 30, firstDelayMs: 1, maxDelayMs: 5 });
  connections[0]!.lose();
  try {
    await bus.stopAndWait('u.service', 100);
    assert.unreachable('the call went through');
  } catch (error) {
    assert.is((error as SystemdError).code, 'DBUS_CLOSED');
    assert.match((error as Error).message, /D-Bus unavailable for 30 ms: no bus yet/);
  }
  bus.close();
});

test.run();
