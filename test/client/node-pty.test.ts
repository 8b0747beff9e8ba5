// The node-pty face against a hand-driven server: synchronous spawn, queued input, node-pty's exit shapes, credit as pause.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { Limits } from '../../src/protocol/index.ts';
import { spawn, type IExitEvent, type IPty } from '../../src/client/node-pty/index.ts';
import { TestServer, type ServerConnection } from './test-server.ts';

function exited(pty: IPty): Promise<IExitEvent> {
  return new Promise((resolve) => pty.onExit(resolve));
}

async function serve(server: TestServer, pid = 4242, version = 1) {
  const conn: ServerConnection = await server.accept();
  await conn.handshake(version);
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  conn.send({ type: 'started', mainPid: pid, unit: 'opencode-pty-session-1.service', programPid: pid + 1, droppedEnv: ['NOTIFY_SOCKET'] });
  return { conn, start };
}

test('spawn returns at once; input and size before STARTED go out after it, in order; START has TERM and size', async () => {
  const server = new TestServer();
  const pty = spawn('bash', ['-l'], { name: 'xterm-256color', cols: 100, rows: 30, cwd: server.dir, env: { A: '1', U: undefined }, socketPath: server.path });
  assert.is(pty.pid, 0, 'no pid before the session started');
  assert.is(pty.process, 'bash');
  pty.write('echo one\r');
  pty.resize(120, 40);
  pty.write(Buffer.from('echo two\r'));
  const started = new Promise((resolve) => pty.onStart(resolve));
  const conn = await server.accept();
  await conn.handshake();
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.equal(start.argv, ['bash', '-l']);
  assert.equal([start.cols, start.rows], [120, 40], 'a resize before START is its size');
  pty.resize(132, 50);
  conn.send({ type: 'started', mainPid: 777, unit: 'opencode-pty-session-1.service' });
  assert.equal(start.env.map(({ name, value }) => `${name}=${value}`).sort(), ['A=1', 'TERM=xterm-256color']);
  assert.equal(await conn.expect('resize').then(({ rows, cols }) => [cols, rows]), [132, 50], 'a resize during START follows STARTED');
  let typed = '';
  while (typed.length < 'echo one\recho two\r'.length) typed += (await conn.expect('input')).data.toString();
  assert.is(typed, 'echo one\recho two\r');
  assert.equal(await started, { pid: 777, unit: 'opencode-pty-session-1.service', droppedEnv: [] });
  assert.is(pty.pid, 777);
  assert.equal([pty.cols, pty.rows], [132, 50]);
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success' });
  assert.equal(await exited(pty), { exitCode: 0, signal: 0 });
  server.close();
});

test('a character split across OUTPUT frames arrives whole; onExit once, after all output, none after it', async () => {
  const server = new TestServer();
  const pty = spawn('sh', [], { cwd: server.dir, socketPath: server.path });
  const data: string[] = [];
  let exits = 0;
  let dataAfterExit = false;
  pty.onData((chunk) => {
    if (exits > 0) dataAfterExit = true;
    data.push(chunk as string);
  });
  const done = new Promise<IExitEvent>((resolve) => pty.onExit((event) => (exits++, resolve(event))));
  const { conn } = await serve(server);
  const euro = Buffer.from('a€b😀', 'utf8');
  for (let i = 0; i < euro.length; i++) conn.send({ type: 'output', data: euro.subarray(i, i + 1) });
  conn.send({ type: 'exit', code: 1, status: 7, result: 'exit-code' });
  assert.equal(await done, { exitCode: 7, signal: 0 });
  assert.is(data.join(''), 'a€b😀');
  assert.ok(data.every((chunk) => !chunk.includes('\ufffd')), 'no replacement character anywhere');
  await new Promise((resolve) => setImmediate(resolve));
  assert.is(exits, 1);
  assert.is(dataAfterExit, false);
  pty.resize(10, 10);
  pty.write('ignored');
  assert.equal([pty.cols, pty.rows], [80, 24], 'resize after exit is a no-op');
  server.close();
});

test('encoding null delivers Buffers; a program killed by a signal exits as node-pty shapes it', async () => {
  const server = new TestServer();
  const pty = spawn('sh', [], { cwd: server.dir, socketPath: server.path, encoding: null });
  const chunks: unknown[] = [];
  pty.onData((chunk) => chunks.push(chunk));
  const done = exited(pty);
  const { conn } = await serve(server);
  conn.send({ type: 'output', data: Buffer.from([0xe2, 0x82]) });
  conn.send({ type: 'exit', code: 2, status: 9, result: 'signal' });
  assert.equal(await done, { exitCode: 0, signal: 9 });
  assert.ok(chunks.every((chunk) => Buffer.isBuffer(chunk)));
  assert.equal([...Buffer.concat(chunks as Buffer[])], [0xe2, 0x82]);
  server.close();
});

test('kill() stops the session and reports SIGHUP as node-pty; kill(name) sends that signal', async () => {
  const server = new TestServer();
  const pty = spawn('sh', [], { cwd: server.dir, socketPath: server.path });
  const done = exited(pty);
  pty.kill('SIGINT');
  const { conn } = await serve(server);
  assert.is((await conn.expect('signal')).signal, 2, 'a signal before STARTED is sent after it');
  assert.throws(() => pty.kill('SIGBOGUS'), /unknown signal/);
  pty.kill();
  await conn.expect('stop');
  conn.send({ type: 'stopped' });
  assert.equal(await done, { exitCode: 0, signal: 1 });
  server.close();
});

test('version 2: pid is the program, kill() reports how the program ended, dropped names reach onStart', async () => {
  const server = new TestServer();
  const pty = spawn('sh', [], { cwd: server.dir, socketPath: server.path });
  const started = new Promise<{ pid: number; droppedEnv: string[] }>((resolve) => pty.onStart(resolve));
  const done = exited(pty);
  const { conn } = await serve(server, 4242, 2);
  const start = await started;
  assert.is(start.pid, 4243);
  assert.is(pty.pid, 4243);
  assert.equal(start.droppedEnv, ['NOTIFY_SOCKET']);
  pty.kill();
  await conn.expect('stop');
  const accounting = { cpuUsageNsec: null, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: 0, outputBytes: 0, durationUsec: 1 };
  conn.send({ type: 'stopped', end: { code: 2, status: 15, result: 'success', accounting } });
  assert.equal(await done, { exitCode: 0, signal: 15 }, 'the signal that ended the program, not an assumed SIGHUP');
  server.close();
});

test('a refused session: an error event and onExit with 125, nothing thrown; an unreachable socket alike', async () => {
  const server = new TestServer();
  const pty = spawn('sh', [], { cwd: server.dir, socketPath: server.path });
  const errors: Error[] = [];
  pty.on('error', (error: Error) => errors.push(error));
  const done = exited(pty);
  const conn = await server.accept();
  await conn.expect('hello');
  conn.send({ type: 'error', code: 5, message: 'session limit reached' });
  assert.equal(await done, { exitCode: 125, signal: 0 });
  assert.is(errors.length, 1);
  assert.is((errors[0] as { code?: string }).code, 'SESSION_LIMIT');

  // No 'error' listener: still no throw, only onExit.
  const lost = spawn('sh', [], { cwd: server.dir, socketPath: `${server.dir}/missing.sock` });
  assert.equal(await exited(lost), { exitCode: 125, signal: 0 });
  server.close();
});

test('pause() holds credit back and loses nothing; resume() delivers it all and returns credit', async () => {
  const server = new TestServer();
  const pty = spawn('sh', [], { cwd: server.dir, socketPath: server.path, encoding: null });
  const received: Buffer[] = [];
  pty.onData((chunk) => received.push(chunk as Buffer));
  pty.pause();
  const { conn } = await serve(server);
  const sent: Buffer[] = [];
  const fill = (byte: number) => {
    for (let i = 0; i < Limits.INITIAL_WINDOW / Limits.MAX_IO_PAYLOAD; i++) {
      const data = Buffer.alloc(Limits.MAX_IO_PAYLOAD, byte + i);
      sent.push(data);
      conn.send({ type: 'output', data });
    }
  };
  fill(0x41);
  // Give the client every chance to read: it must not, and must not grant credit.
  for (let turn = 0; turn < 200; turn++) await new Promise((resolve) => setImmediate(resolve));
  assert.is(received.length, 0, 'nothing delivered while paused');
  assert.ok(conn.nothingPending(), 'no CREDIT while paused: the server may send nothing more');
  pty.resume();
  let credited = 0;
  while (credited < Limits.INITIAL_WINDOW) credited += (await conn.expect('credit')).bytes;
  assert.is(credited, Limits.INITIAL_WINDOW, 'credit for exactly what was delivered');
  fill(0x61);
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success' });
  assert.equal(await exited(pty), { exitCode: 0, signal: 0 });
  assert.ok(Buffer.concat(received).equals(Buffer.concat(sent)), 'every byte, in order');
  server.close();
});

test('options that cannot apply are refused at once; so are bad sizes and Windows-style args', () => {
  for (const [options, pattern] of [
    [{ uid: 0 }, /uid is not supported/],
    [{ gid: 0 }, /gid is not supported/],
    [{ useConpty: true }, /Windows option/],
    [{ handleFlowControl: true }, /pause\(\)\/resume\(\)/],
    [{ encoding: 'latin1' }, /encoding latin1/],
    [{ cols: 0 }, /cols must be/],
    [{ colour: 'red' }, /unknown option colour/],
  ] as const) {
    assert.throws(() => spawn('sh', [], options as never), pattern, JSON.stringify(options));
  }
  assert.throws(() => spawn('sh', '-c true' as never), /Windows form/);
  assert.throws(() => spawn('', []), /file must be/);
});

test.run();
