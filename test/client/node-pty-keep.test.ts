// The node-pty face in version 3: spawn with keepMs names the session by `id`; attach(id, { cursor }) returns an IPty
// whose first onData is the replay (cursor -1: from now); an observer cannot type; detach() leaves it running.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { Limits } from '../../src/protocol/index.ts';
import { attach, spawn, type IExitEvent, type IPty } from '../../src/client/node-pty/index.ts';
import { TestServer } from './test-server.ts';

const ID = 0xa3c9e01b2d4f5;
const UNIT = 'opencode-pty-session-a3c9e01b2d4f5aa.service';

function exited(pty: IPty): Promise<IExitEvent> {
  return new Promise((resolve) => pty.onExit(resolve));
}

function dataOf(pty: IPty): string[] {
  const data: string[] = [];
  pty.onData((chunk) => data.push(chunk as string));
  return data;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 100_000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.unreachable(`never reached: ${what}`);
}

test('spawn with keepMs and a label: START carries them, and the IPty has the session id and a cursor', async () => {
  const server = new TestServer();
  const pty = spawn('sh', [], { cwd: server.dir, socketPath: server.path, keepMs: 120_000, label: 'dev server' });
  assert.is(pty.id, undefined, 'no id before the session started');
  const data = dataOf(pty);
  const conn = await server.accept();
  await conn.handshake(3);
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.equal([start.keepMs, start.retainBytes, start.label], [120_000, 0, 'dev server']);
  conn.send({ type: 'started', programPid: 4243, mainPid: 4242, unit: UNIT, droppedEnv: [], sessionId: ID });
  conn.send({ type: 'output', data: Buffer.from('ready\r\n') });
  await until(() => data.join('') === 'ready\r\n', 'the output');
  assert.equal([pty.id, pty.cursor, pty.pid], [ID, 7, 4243]);
  let exits = 0;
  pty.onExit(() => exits++);
  pty.detach();
  assert.is(await conn.readFrame().then((r) => r.frame.type, () => 'closed'), 'closed');
  await new Promise((resolve) => setImmediate(resolve));
  assert.is(exits, 0, 'detaching is not an exit');
  server.close();
});

test('attach(id, { cursor }) sends ATTACH from the cursor; the first onData is the replay; onExit after EXIT', async () => {
  const server = new TestServer();
  const pty = attach(ID, { cursor: 7, cols: 120, rows: 40, socketPath: server.path });
  const data = dataOf(pty);
  const conn = await server.accept();
  await conn.handshake(3);
  const request = await conn.expect('attach');
  assert.equal([request.id, request.fromOffset, request.role, request.cols, request.rows], [ID, 7n, 1, 120, 40]);
  conn.send({ type: 'attached', id: ID, role: 1, generation: 2, oldest: 0n, next: 12n, programPid: 4243, mainPid: 4242, unit: UNIT });
  conn.send({ type: 'output', data: Buffer.from('hello') }); // the replay, 7..12
  conn.send({ type: 'output', data: Buffer.from(' world') });
  await until(() => data.join('') === 'hello world', 'replay then live');
  assert.is(data[0], 'hello', 'the first onData is the replay');
  assert.equal([pty.id, pty.cursor, pty.pid, pty.role], [ID, 18, 4243, 'control']);
  pty.write('ls\r');
  assert.is((await conn.expect('input')).data.toString(), 'ls\r');
  const done = exited(pty);
  conn.send({ type: 'exit', code: 1, status: 3, result: 'exit-code', accounting: { cpuUsageNsec: 0, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: 0, inputBytes: 3, outputBytes: 11, durationUsec: 1 } });
  assert.equal(await done, { exitCode: 3, signal: 0 });
  server.close();
});

test('cursor -1 attaches from now; an observer cannot write, its resize stays local, its kill() ends only its view', async () => {
  const server = new TestServer();
  const pty = attach(ID, { cursor: -1, role: 'observe', socketPath: server.path });
  const conn = await server.accept();
  await conn.handshake(3);
  const request = await conn.expect('attach');
  assert.equal([request.fromOffset, request.role], [Limits.FROM_NOW, 2]);
  conn.send({ type: 'attached', id: ID, role: 2, generation: 5, oldest: 0n, next: 500n, programPid: 4243, mainPid: 4242, unit: UNIT });
  await new Promise<void>((resolve) => pty.onStart(() => resolve()));
  assert.is(pty.cursor, 500);
  assert.throws(() => pty.write('x'), /observes session/);
  pty.resize(100, 30);
  const done = exited(pty);
  pty.kill();
  assert.equal(await done, { exitCode: 0, signal: 0 });
  assert.is(await conn.readFrame().then((r) => r.frame.type, () => 'closed'), 'closed', 'no RESIZE, no STOP: the connection just closed');
  server.close();
});

test('attach refuses bad ids and cursors synchronously; a version 2 server fails the IPty visibly', async () => {
  assert.throws(() => attach(0), /session id/);
  assert.throws(() => attach(ID, { cursor: -2 }), /cursor/);
  assert.throws(() => attach(ID, { cursor: 1.5 }), /cursor/);
  assert.throws(() => attach(ID, { role: 'admin' as never }), /role/);
  assert.throws(() => attach(ID, { cwd: '/' } as never), /unknown attach option cwd/);
  assert.throws(() => spawn('sh', [], { keepMs: -1 }), /keepMs/);
  const server = new TestServer();
  const pty = attach(ID, { socketPath: server.path });
  const data = dataOf(pty);
  const conn = await server.accept();
  await conn.handshake(2);
  assert.equal(await exited(pty), { exitCode: 125, signal: 0 });
  assert.match(data.join(''), 'needs protocol version 3');
  assert.ok(conn.nothingPending(), 'no ATTACH reached a server that does not know it');
  server.close();
});

test.run();
