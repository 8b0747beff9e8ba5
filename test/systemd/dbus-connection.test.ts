// DbusConnection against a scripted peer: fd negotiation asserted, call timeouts, D-Bus errors by
// name, signal dispatch only from systemd's own connection, loss of the connection.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import dbus from 'dbus-next';
import { closeSync, openSync } from 'node:fs';
import { DbusConnection, describeSocketError, toVariantProperties, unwrapVariants, type SystemdSignal } from '../../src/systemd/dbus-connection.ts';
import { FakeBus } from './fake-bus.ts';
import { rejectsCode } from './helpers.ts';

const UNIT_PATH = '/org/freedesktop/systemd1/unit/x_2eservice';

function nextSignal(connection: DbusConnection): Promise<SystemdSignal> {
  return new Promise((resolve) => {
    const stop = connection.onSignal((signal) => {
      stop();
      resolve(signal);
    });
  });
}

test('unwrapVariants turns nested Variants into plain values and keeps Buffers', () => {
  const value = unwrapVariants({ a: new dbus.Variant('v', new dbus.Variant('s', 'x')), b: [new dbus.Variant('u', 3)], c: Buffer.from([1, 2]) });
  assert.equal(value, { a: 'x', b: [3], c: Buffer.from([1, 2]) });
});

test('toVariantProperties wraps each tuple value with its signature', () => {
  const [[name, variant]] = toVariantProperties([['ExecStartEx', 'a(sasas)', [['/bin/true', ['/bin/true'], ['no-env-expand']]]]]);
  assert.is(name, 'ExecStartEx');
  assert.ok(variant instanceof dbus.Variant);
  assert.is(variant.signature, 'a(sasas)');
  assert.equal(variant.value, [['/bin/true', ['/bin/true'], ['no-env-expand']]]);
});

test("usocket's errors are named by call and errno, which libuv names not for ETOOMANYREFS", () => {
  const usocket = (errno: number) => Object.assign(new Error(", USocketWrap '../src/uwrap.cc:608'"), { errno, syscall: 'sendmsg' });
  assert.is(describeSocketError(usocket(109)), 'sendmsg ETOOMANYREFS');
  assert.is(describeSocketError(usocket(32)), 'sendmsg EPIPE');
  assert.is(describeSocketError(new Error('plain')), 'plain');
});

test('a bus that refuses fd passing is refused with DBUS_NO_FD_PASSING', async () => {
  const bus = await FakeBus.start({ refuseFds: true });
  try {
    await rejectsCode(DbusConnection.open(bus.address, { timeoutMs: 5000 }), 'DBUS_NO_FD_PASSING');
    assert.not.ok(bus.calls.some((call) => call.member === 'AddMatch'), 'nothing sent past Hello');
  } finally {
    await bus.stop();
  }
});

test('a call without a reply fails with DBUS_TIMEOUT', async () => {
  const bus = await FakeBus.start({ silentAfterHello: true });
  try {
    await rejectsCode(DbusConnection.open(bus.address, { timeoutMs: 50 }), 'DBUS_TIMEOUT');
    assert.ok(bus.calls.some((call) => call.member === 'GetNameOwner'));
  } finally {
    await bus.stop();
  }
});

test("one match rule at open (systemd's name changing hands); a rule is sent once however many use it, removed after the last", async () => {
  const bus = await FakeBus.start();
  bus.replies.set('RemoveMatch', (call) => bus.methodReturn(call));
  const connection = await DbusConnection.open(bus.address, { timeoutMs: 5000 });
  const count = (member: string) => bus.calls.filter((call) => call.member === member).length;
  try {
    assert.is(count('AddMatch'), 1, "open() subscribes to systemd's NameOwnerChanged alone");
    assert.match(bus.calls.find((call) => call.member === 'AddMatch')!.text, "member='NameOwnerChanged',arg0='org.freedesktop.systemd1'");
    await Promise.all([connection.addMatch("type='signal',path='/a'"), connection.addMatch("type='signal',path='/a'")]);
    assert.is(count('AddMatch'), 2);
    connection.removeMatch("type='signal',path='/a'");
    connection.removeMatch("type='signal',path='/b'");
    // A round trip after the removals: the bus has seen whatever they sent.
    await connection.addMatch("type='signal',path='/c'");
    assert.is(count('RemoveMatch'), 0, 'one user is left');
    connection.removeMatch("type='signal',path='/a'");
    await connection.addMatch("type='signal',path='/d'");
    assert.is(count('RemoveMatch'), 1);
    assert.is(count('AddMatch'), 4);
  } finally {
    connection.close();
    await bus.stop();
  }
});

test('a missing socket fails with DBUS_CONNECT_FAILED', async () => {
  const bus = await FakeBus.start();
  const address = bus.address;
  await bus.stop();
  await rejectsCode(DbusConnection.open(address, { timeoutMs: 5000 }), 'DBUS_CONNECT_FAILED');
});

test('calls resolve with the reply body; D-Bus errors carry their name under DBUS_ERROR', async () => {
  const bus = await FakeBus.start();
  bus.replies.set('Echo', (call) => bus.methodReturn(call, 'su', ['pong', 7]));
  bus.replies.set('Boom', (call) => bus.error(call, 'org.freedesktop.systemd1.NoSuchUnit', 'Unit x.service not loaded.'));
  const connection = await DbusConnection.open(bus.address, { timeoutMs: 5000 });
  try {
    assert.equal(await connection.call({ path: '/', interface: 'test.Iface', member: 'Echo' }), ['pong', 7]);
    const error = await rejectsCode(connection.call({ path: '/', interface: 'test.Iface', member: 'Boom' }), 'DBUS_ERROR');
    assert.is(error.dbusName, 'org.freedesktop.systemd1.NoSuchUnit');
  } finally {
    connection.close();
    await bus.stop();
  }
});

test('signals are dispatched unpacked, and only when sent by systemd\'s connection', async () => {
  const bus = await FakeBus.start();
  const connection = await DbusConnection.open(bus.address, { timeoutMs: 5000 });
  try {
    const received = nextSignal(connection);
    // A forged signal first (another sender), then the real ones: the first one seen must be real.
    bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'UnitRemoved', 'so', ['forged.service', UNIT_PATH], ':1.66');
    bus.signal(UNIT_PATH, 'org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as', [
      'org.freedesktop.systemd1.Unit',
      { ActiveState: new dbus.Variant('s', 'inactive') },
      ['Job'],
    ]);
    assert.equal(await received, {
      kind: 'properties-changed',
      path: UNIT_PATH,
      interface: 'org.freedesktop.systemd1.Unit',
      changed: { ActiveState: 'inactive' },
      invalidated: ['Job'],
    });
    const job = nextSignal(connection);
    bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'JobRemoved', 'uoss', [9, '/org/freedesktop/systemd1/job/9', 'x.service', 'done']);
    assert.equal(await job, { kind: 'job-removed', id: 9, job: '/org/freedesktop/systemd1/job/9', unit: 'x.service', result: 'done' });
    const removed = nextSignal(connection);
    bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'UnitRemoved', 'so', ['x.service', UNIT_PATH]);
    assert.equal(await removed, { kind: 'unit-removed', unit: 'x.service', path: UNIT_PATH });
  } finally {
    connection.close();
    await bus.stop();
  }
});

test("systemd's new connection after a re-exec: its signals count, from the driver's NameOwnerChanged alone (a forged one changes nothing), and listeners are told", async () => {
  const bus = await FakeBus.start();
  const connection = await DbusConnection.open(bus.address, { timeoutMs: 5000 });
  const owner = (name: string, sender: string) => bus.signal('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameOwnerChanged', 'sss', ['org.freedesktop.systemd1', ':1.0', name], sender);
  const removed = (unit: string, sender: string) => bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'UnitRemoved', 'so', [unit, UNIT_PATH], sender);
  try {
    // Another client claims, in a directed signal, that it now owns systemd's name, then speaks as systemd.
    owner(':1.66', ':1.66');
    removed('forged.service', ':1.66');
    // systemd re-executed: the driver says who owns the name now; the old connection is heard no more.
    const reconnected = nextSignal(connection);
    owner(':1.9', 'org.freedesktop.DBus');
    assert.equal(await reconnected, { kind: 'systemd-reconnected', owner: ':1.9' });
    const next = nextSignal(connection);
    removed('old.service', ':1.0');
    removed('forged.service', ':1.66');
    removed('x.service', ':1.9');
    assert.equal(await next, { kind: 'unit-removed', unit: 'x.service', path: UNIT_PATH });
  } finally {
    connection.close();
    await bus.stop();
  }
});

test("a bus that refuses the rule for systemd's owner changes (its match quota): open() fails, rather than a re-exec going unseen", async () => {
  const bus = await FakeBus.start();
  bus.replies.set('AddMatch', (call) =>
    call.text.includes('NameOwnerChanged') ? bus.error(call, 'org.freedesktop.DBus.Error.LimitsExceeded', 'Connection has too many match rules') : bus.methodReturn(call),
  );
  try {
    let failure: unknown;
    await DbusConnection.open(bus.address, { timeoutMs: 5000 }).then((connection) => connection.close(), (error) => (failure = error));
    // Before: the refusal went unheard and open() succeeded.
    assert.match(String((failure as Error)?.message), /too many match rules/);
  } finally {
    await bus.stop();
  }
});

test("systemd's name changing hands right behind the answer to open()'s GetNameOwner: the newer word, the driver's, stands", async () => {
  const bus = await FakeBus.start();
  // The answer names the connection systemd had; the re-exec's NameOwnerChanged follow in the same write.
  bus.replies.set('GetNameOwner', (call) => {
    queueMicrotask(() => {
      bus.signal('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameOwnerChanged', 'sss', ['org.freedesktop.systemd1', ':1.0', ''], 'org.freedesktop.DBus');
      bus.signal('/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameOwnerChanged', 'sss', ['org.freedesktop.systemd1', '', ':1.9'], 'org.freedesktop.DBus');
    });
    return bus.methodReturn(call, 's', [':1.0']);
  });
  const connection = await DbusConnection.open(bus.address, { timeoutMs: 5000 });
  try {
    const next = nextSignal(connection);
    bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'UnitRemoved', 'so', ['old.service', UNIT_PATH], ':1.0');
    bus.signal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'UnitRemoved', 'so', ['x.service', UNIT_PATH], ':1.9');
    assert.equal(await next, { kind: 'unit-removed', unit: 'x.service', path: UNIT_PATH });
  } finally {
    connection.close();
    await bus.stop();
  }
});

test('losing the connection fails calls in flight with DBUS_CLOSED and tells onClose', async () => {
  const bus = await FakeBus.start();
  const connection = await DbusConnection.open(bus.address, { timeoutMs: 60_000 });
  try {
    const closed = new Promise((resolve) => connection.onClose(resolve));
    const pending = connection.call({ path: '/', interface: 'test.Iface', member: 'NeverAnswered' });
    // Hang up only once the call has reached the peer, so it is truly in flight.
    while (!bus.calls.some((call) => call.member === '?')) await new Promise(setImmediate);
    bus.hangUp();
    await rejectsCode(pending, 'DBUS_CLOSED');
    await closed;
    assert.ok(connection.closed);
    await rejectsCode(connection.call({ path: '/', interface: 'test.Iface', member: 'Later' }), 'DBUS_CLOSED');
  } finally {
    connection.close();
    await bus.stop();
  }
});

test('a send the kernel refuses (the descriptors of a start) ends the connection at once: calls fail DBUS_CLOSED with the cause, onClose is told', async () => {
  const bus = await FakeBus.start({ refuseDescriptors: true });
  // Long enough that a call which waited for its timeout would fail DBUS_TIMEOUT, not DBUS_CLOSED.
  const connection = await DbusConnection.open(bus.address, { timeoutMs: 60_000 });
  const fd = openSync('/dev/null', 'r');
  try {
    if (!bus.refusing) return; // a kernel without SO_PASSRIGHTS: nothing refuses the descriptor
    const closed = new Promise<Error>((resolve) => connection.onClose(resolve));
    // In flight before the refused send: it waits on the same connection.
    const pending = connection.call({ path: '/', interface: 'test.Iface', member: 'NeverAnswered' });
    const refused = connection.call({ path: '/', interface: 'test.Iface', member: 'TakeFd', signature: 'h', body: [fd] });
    const error = await rejectsCode(refused, 'DBUS_CLOSED');
    assert.match(String((error as Error).message), /EPERM/);
    await rejectsCode(pending, 'DBUS_CLOSED');
    assert.match((await closed).message, /EPERM/);
    assert.ok(connection.closed);
  } finally {
    closeSync(fd);
    connection.close();
    await bus.stop();
  }
});

test.run();
