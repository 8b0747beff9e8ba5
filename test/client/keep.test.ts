// Version 3 in the client library against a hand-driven server: kept starts, list(), attach() with replay,
// TRUNCATED and offsets, roles held locally, stopSession(), detach(), and a version 2 server's clean refusal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { ErrorCode, Limits, sessionsFrame, type SessionEntry } from '../../src/protocol/index.ts';
import { ClientError, type Client, type Session } from '../../src/client/index.ts';
import { TestServer, type ServerConnection } from './test-server.ts';
import { handshaken, rejection } from '../support/client-server.ts';

const ID = 0xa3c9e01b2d4f5;
const UNIT = 'opencode-pty-session-a3c9e01b2d4f5aa.service';

function throwsClient(fn: () => unknown, code: string): void {
  try {
    fn();
  } catch (error) {
    assert.instance(error, ClientError);
    assert.is((error as ClientError).code, code, (error as Error).message);
    return;
  }
  assert.unreachable(`expected ${code}`);
}

/** Reads `n` bytes of the session's output (paused mode), so `offset` counts exactly what was read. */
async function readBytes(session: Session, n: number): Promise<string> {
  let got = '';
  while (got.length < n) {
    const chunk = session.output.read(Math.min(n - got.length, session.output.readableLength || 1)) as Buffer | null;
    if (chunk) got += chunk.toString('latin1');
    else await new Promise((resolve) => session.output.once('readable', resolve));
  }
  return got;
}

function attached(fields: Partial<{ role: 1 | 2; generation: number; oldest: bigint; next: bigint; id: number }> = {}) {
  return { type: 'attached' as const, id: ID, role: 1 as const, generation: 2, oldest: 0n, next: 100n, programPid: 4243, mainPid: 4242, unit: UNIT, ...fields };
}

async function attachedSession(server: TestServer, options: Parameters<Client['attach']>[1], answer = attached()) {
  const { client, conn } = await handshaken(server, 3);
  const attaching = client.attach(ID, options);
  const request = await conn.expect('attach');
  conn.send(answer);
  return { session: await attaching, conn, request };
}

const closed = (conn: ServerConnection) => conn.readFrame().then((r) => r.frame.type, () => 'closed');

test('a kept START carries keepMs, retainBytes and the label; STARTED v3 gives the session its id', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 3);
  assert.is(client.version, 3);
  const starting = client.start({ argv: ['make'], cwd: server.dir, keepMs: 600_000, retainBytes: 1 << 20, label: 'build' });
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.equal([start.keepMs, start.retainBytes, start.label], [600_000, 1 << 20, 'build']);
  conn.send({ type: 'started', programPid: 4243, mainPid: 4242, unit: UNIT, droppedEnv: [], sessionId: ID });
  const session = await starting;
  assert.equal([session.id, session.kept, session.role, session.generation, session.offset], [ID, true, 'control', 1, 0]);
  conn.send({ type: 'output', data: Buffer.from('hello') });
  assert.is(await readBytes(session, 5), 'hello');
  assert.is(session.offset, 5, 'a STARTED connection counts from offset 0');
  session.detach();
  assert.equal(await session.exit, { reason: 'detached', code: 0, status: 0, result: 'detached' });
  assert.is(await closed(conn), 'closed', 'detaching closes the connection, with no frame');
  server.close();
});

test('a plain START in version 3 is not kept: its keep fields are zero, and detach() refuses', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 3);
  const starting = client.start({ argv: ['sh'], cwd: server.dir });
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.equal([start.keepMs, start.retainBytes, start.label], [0, 0, '']);
  conn.send({ type: 'started', programPid: 4243, mainPid: 4242, unit: UNIT, droppedEnv: [], sessionId: ID });
  const session = await starting;
  assert.is(session.kept, false);
  throwsClient(() => session.detach(), 'STATE');
  session.close();
  server.close();
});

test('a version 2 server: keepMs, list, attach and stopSession are UNSUPPORTED and send nothing', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 2);
  await rejection(client.start({ argv: ['sh'], cwd: server.dir, keepMs: 1000 })).then((e) => assert.is(e.code, 'UNSUPPORTED'));
  await rejection(client.start({ argv: ['sh'], cwd: server.dir, label: 'x' })).then((e) => assert.is(e.code, 'UNSUPPORTED'));
  await rejection(client.list()).then((e) => assert.match(e.message, 'needs protocol version 3; this server speaks version 2'));
  await rejection(client.attach(ID)).then((e) => assert.is(e.code, 'UNSUPPORTED'));
  await rejection(client.stopSession(ID)).then((e) => assert.is(e.code, 'UNSUPPORTED'));
  assert.ok(conn.nothingPending(), 'no request reached the server');
  // The connection is still good for what version 2 has.
  const starting = client.start({ argv: ['sh'], cwd: server.dir });
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  conn.send({ type: 'started', programPid: 4243, mainPid: 4242, unit: UNIT, droppedEnv: [] });
  const session = await starting;
  assert.is(session.id, undefined);
  session.close();
  server.close();
});

const ENTRY: SessionEntry = {
  id: ID, state: 4, controllers: 0, observers: 0, rows: 24, cols: 80, programPid: 4243, mainPid: 4242,
  startedAtMs: 1_796_601_600_000, keepMs: 600_000, deadlineMs: 1_796_602_500_000, oldest: 1024n, next: 9216n,
  fresh: true, endCode: 1, endStatus: 7, origin: 1, label: 'build', program: 'make', cwd: '/home/ada/src',
};

test('list() sends LIST and returns the entries as plain objects; the connection is done after', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 3);
  const listing = client.list();
  await conn.expect('list');
  conn.send(sessionsFrame([ENTRY, { ...ENTRY, id: 7, state: 2, controllers: 1, observers: 2, deadlineMs: 0, endCode: 0, endStatus: 0, fresh: false, origin: 2 }]));
  const sessions = await listing;
  assert.equal(sessions[0], {
    id: ID, state: 'ended', controllers: 0, observers: 0, rows: 24, cols: 80, programPid: 4243, mainPid: 4242,
    startedAtMs: 1_796_601_600_000, keepMs: 600_000, deadlineMs: 1_796_602_500_000, oldest: 1024, next: 9216,
    fresh: true, end: { code: 1, status: 7 }, origin: 'main-pid', label: 'build', program: 'make', cwd: '/home/ada/src',
  });
  assert.equal([sessions[1]!.state, sessions[1]!.deadlineMs, sessions[1]!.end, sessions[1]!.fresh, sessions[1]!.observers], ['attached', null, null, false, 2]);
  assert.is(sessions[1]!.origin, 'unit-process', 'a session another process of the unit started');
  assert.is(await closed(conn), 'closed');
  await rejection(client.list()).then((e) => assert.is(e.code, 'CLOSED'));
  server.close();
});

test('an ERROR answering a request rejects with its name (NOT_PERMITTED, NO_SESSION)', async () => {
  const server = new TestServer();
  let { client, conn } = await handshaken(server, 3);
  const listing = client.list();
  await conn.expect('list');
  conn.send({ type: 'error', code: ErrorCode.NOT_PERMITTED, message: 'only the client service\'s main process may list' });
  assert.is((await rejection(listing)).code, 'NOT_PERMITTED');
  ({ client, conn } = await handshaken(server, 3));
  const attaching = client.attach(12345);
  await conn.expect('attach');
  conn.send({ type: 'error', code: ErrorCode.NO_SESSION, message: 'no kept session 12345' });
  const error = await rejection(attaching);
  assert.equal([error.code, error.remote], ['NO_SESSION', true]);
  server.close();
});

test('attach() sends ATTACH; the replay then live output arrive in order, and offset counts what was read', async () => {
  const server = new TestServer();
  const { session, conn, request } = await attachedSession(server, { from: 40, rows: 50, cols: 132 });
  assert.equal([request.id, request.fromOffset, request.role, request.rows, request.cols], [ID, 40n, 1, 50, 132]);
  assert.equal([session.id, session.kept, session.role, session.generation, session.pid, session.unit], [ID, true, 'control', 2, 4243, UNIT]);
  assert.is(session.offset, 40, 'before any byte: the offset asked for');
  conn.send({ type: 'output', data: Buffer.from('r'.repeat(60)) }); // the replay, 40..100
  conn.send({ type: 'output', data: Buffer.from('live') });
  assert.is(await readBytes(session, 10), 'r'.repeat(10));
  assert.is(session.offset, 50, 'only what was read counts');
  assert.is(await readBytes(session, 54), `${'r'.repeat(50)}live`);
  assert.is(session.offset, 104);
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success', accounting: { cpuUsageNsec: 1, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: 1, inputBytes: 0, outputBytes: 64, durationUsec: 9 } });
  assert.is((await session.exit).reason, 'exit');
  server.close();
});

test('from older than retained: TRUNCATED first, then output from oldest; a later TRUNCATED jumps the offset again', async () => {
  const server = new TestServer();
  const { session, conn } = await attachedSession(server, {}, attached({ oldest: 1000n, next: 1500n }));
  const events: unknown[] = [];
  session.on('truncated', (event) => events.push(event));
  conn.send({ type: 'truncated', oldest: 1000n, dropped: 1000n });
  conn.send({ type: 'output', data: Buffer.from('x'.repeat(500)) });
  conn.send({ type: 'truncated', oldest: 3000n, dropped: 1500n }); // the controller fell behind: 1500..3000 gone
  conn.send({ type: 'output', data: Buffer.from('yy') });
  assert.is(await readBytes(session, 400), 'x'.repeat(400));
  assert.is(session.offset, 1400);
  assert.is(await readBytes(session, 100), 'x'.repeat(100));
  assert.is(session.offset, 3000, 'past the last byte before the jump: the next byte read is at oldest');
  assert.is(await readBytes(session, 2), 'yy');
  assert.is(session.offset, 3002);
  assert.equal(events, [{ oldest: 1000, dropped: 1000 }, { oldest: 3000, dropped: 1500 }]);
  session.close();
  server.close();
});

test('a TRUNCATED that contradicts the offsets, an ATTACHED for another id, a generation going back: PROTOCOL', async () => {
  const server = new TestServer();
  let { session, conn } = await attachedSession(server, { from: 0 });
  conn.send({ type: 'truncated', oldest: 500n, dropped: 400n }); // from 0, 500 would be dropped
  assert.is((await rejection(session.exit)).code, 'PROTOCOL');
  ({ session, conn } = await attachedSession(server, {}));
  conn.send({ type: 'controller-changed', generation: 2, role: 2 });
  assert.match((await rejection(session.exit)).message, 'generation 2 after 2');
  const { client, conn: other } = await handshaken(server, 3);
  const attaching = client.attach(ID);
  await other.expect('attach');
  other.send(attached({ id: ID + 1 }));
  assert.is((await rejection(attaching)).code, 'PROTOCOL');
  const { client: late, conn: third } = await handshaken(server, 3);
  const past = late.attach(ID, { from: 200 });
  await third.expect('attach');
  third.send(attached({ next: 100n }));
  assert.match((await rejection(past)).message, "past the session's next offset");
  server.close();
});

test("from 'now' asks FROM_NOW and counts from ATTACHED's next", async () => {
  const server = new TestServer();
  const { session, conn, request } = await attachedSession(server, { from: 'now', role: 'observe' }, attached({ role: 2, oldest: 10n, next: 777n }));
  assert.equal([request.fromOffset, request.role], [Limits.FROM_NOW, 2]);
  conn.send({ type: 'output', data: Buffer.from('abc') });
  assert.is(await readBytes(session, 3), 'abc');
  assert.is(session.offset, 780);
  session.close();
  server.close();
});

test('an observer holds its role locally: write, resize, signal and stop throw NOT_CONTROLLER and send nothing', async () => {
  const server = new TestServer();
  const { session, conn } = await attachedSession(server, { role: 'observe' }, attached({ role: 2 }));
  assert.is(session.role, 'observe');
  throwsClient(() => session.write('rm -rf ~\r'), 'NOT_CONTROLLER');
  throwsClient(() => session.resize(30, 100), 'NOT_CONTROLLER');
  throwsClient(() => session.signal(2), 'NOT_CONTROLLER');
  assert.match((await rejection(session.stop())).message, 'observes session');
  session.input.write('discarded');
  session.input.end();
  // Output still flows (less than a credit batch: the client owes no CREDIT yet).
  conn.send({ type: 'output', data: Buffer.alloc(Limits.MAX_IO_PAYLOAD, 0x61) });
  assert.is((await readBytes(session, Limits.MAX_IO_PAYLOAD)).length, Limits.MAX_IO_PAYLOAD);
  assert.ok(conn.nothingPending(), 'no INPUT, RESIZE, SIGNAL, STOP or END_INPUT was sent');
  session.close();
  server.close();
});

test('CONTROLLER_CHANGED demotes the controller: the event, the role, input not yet sent is dropped', async () => {
  const server = new TestServer();
  const { session, conn } = await attachedSession(server, {});
  const changes: unknown[] = [];
  session.on('controller-changed', (event) => changes.push(event));
  // More than the initial window: the rest waits for credit that will not come before the demotion.
  session.write(Buffer.alloc(Limits.INITIAL_WINDOW + 1000, 0x62));
  let sent = 0;
  while (sent < Limits.INITIAL_WINDOW) sent += (await conn.expect('input')).data.length;
  assert.is(sent, Limits.INITIAL_WINDOW);
  conn.send({ type: 'controller-changed', generation: 3, role: 2 });
  await new Promise<void>((resolve) => session.once('controller-changed', () => resolve()));
  assert.equal(changes, [{ generation: 3, role: 'observe' }]);
  assert.equal([session.role, session.generation], ['observe', 3]);
  conn.send({ type: 'credit', bytes: 4096 });
  throwsClient(() => session.write('x'), 'NOT_CONTROLLER');
  conn.send({ type: 'output', data: Buffer.from('still watching') });
  assert.is(await readBytes(session, 14), 'still watching');
  assert.ok(conn.nothingPending(), 'the 1000 bytes left were not sent after the demotion');
  session.close();
  server.close();
});

test('stopSession() sends STOP_SESSION and resolves with the STOPPED end', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 3);
  const stopping = client.stopSession(ID);
  assert.is((await conn.expect('stop-session')).id, ID);
  const accounting = { cpuUsageNsec: 1, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: 0, inputBytes: 0, outputBytes: 0, durationUsec: 5 };
  conn.send({ type: 'stopped', end: { code: 2, status: 1, result: 'success', accounting } });
  assert.equal(await stopping, { reason: 'stopped', code: 2, status: 1, result: 'success', accounting });
  assert.is(await closed(conn), 'closed');
  server.close();
});

test('invalid ids and options are INVALID_ARGUMENT before anything is sent; one request per connection', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 3);
  for (const id of [0, -1, 1.5, 2 ** 53, Number.NaN]) await rejection(client.attach(id)).then((e) => assert.is(e.code, 'INVALID_ARGUMENT', String(id)));
  await rejection(client.attach(ID, { from: -1 })).then((e) => assert.is(e.code, 'INVALID_ARGUMENT'));
  await rejection(client.attach(ID, { role: 'admin' as never })).then((e) => assert.is(e.code, 'INVALID_ARGUMENT'));
  await rejection(client.attach(ID, { rows: 0 })).then((e) => assert.is(e.code, 'INVALID_ARGUMENT'));
  await rejection(client.stopSession(0)).then((e) => assert.is(e.code, 'INVALID_ARGUMENT'));
  await rejection(client.start({ argv: ['sh'], cwd: server.dir, keepMs: 0, retainBytes: 8192 })).then((e) => assert.is(e.code, 'BAD_START'));
  await rejection(client.start({ argv: ['sh'], cwd: server.dir, keepMs: 1, label: 'a\nb' })).then((e) => assert.is(e.code, 'BAD_START'));
  assert.ok(conn.nothingPending());
  const listing = client.list();
  await rejection(client.attach(ID)).then((e) => assert.is(e.code, 'STATE'));
  await conn.expect('list');
  conn.send({ type: 'sessions', sessions: [] });
  assert.equal(await listing, []);
  server.close();
});

test.run();
