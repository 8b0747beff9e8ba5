// The client library against a hand-driven server: handshake, START with its cwd fd, credit both ways, every end.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, fstatSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, LATEST_VERSION, Limits, PROTOCOL_VERSION, encodeFrame } from '../../src/protocol/index.ts';
import { ClientError, connect, exitStatus, type Session } from '../../src/client/index.ts';
import { TestServer, type ServerConnection } from './test-server.ts';
import { handshaken, rejection } from '../support/client-server.ts';

/** Waits, turn by turn of the event loop, until `condition` holds: a state to reach, not a delay. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 100_000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.unreachable(`never reached: ${what}`);
}

/** Descriptors of this process open on `dir`. */
function fdsOn(dir: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === dir;
    } catch {
      return false;
    }
  }).length;
}

/** A connected client with a started session, and the server's side of it. */
async function startedSession(server: TestServer): Promise<{ session: Session; conn: ServerConnection }> {
  const { client, conn } = await handshaken(server, 1);
  const starting = client.start({ argv: ['sh'], cwd: server.dir });
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  conn.send({ type: 'started', mainPid: 4242, unit: 'opencode-pty-session-1.service' });
  return { session: await starting, conn };
}

test('the handshake offers versions 1..4 and follows the one WELCOME names; any other is PROTOCOL', async () => {
  const server = new TestServer();
  for (const version of [1, 2, 3, 4]) {
    const accepted = server.accept();
    const connecting = connect(server.path);
    const conn = await accepted;
    const hello = await conn.handshake(version);
    assert.equal([hello.minVersion, hello.maxVersion], [PROTOCOL_VERSION, LATEST_VERSION]);
    const client = await connecting;
    assert.is(client.version, version);
    client.close();
  }
  const accepted = server.accept();
  const connecting = rejection(connect(server.path));
  const conn = await accepted;
  await conn.expect('hello');
  conn.send({ type: 'welcome', version: LATEST_VERSION + 1 });
  assert.is((await connecting).code, 'PROTOCOL');
  server.close();
});

test('version 2: STARTED names the program pid and dropped names; input.end() is END_INPUT after the last INPUT', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 2);
  const big: Record<string, string> = { TERM: 'xterm' };
  for (let i = 0; i < Limits.MAX_ENVC + 2; i++) big[`V${i}`] = String(i);
  const starting = client.start({ argv: ['cat'], cwd: server.dir, env: big });
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.is(start.env.length, Limits.MAX_ENVC, 'trimmed to what one START holds, not refused');
  assert.is(start.env[0]!.name, 'TERM', 'TERM kept first');
  conn.send({ type: 'started', programPid: 4243, mainPid: 4242, unit: 'opencode-pty-session-1.service', droppedEnv: ['LISTEN_FDS'] });
  const session = await starting;
  assert.is(session.pid, 4243);
  assert.is(session.mainPid, 4242);
  assert.equal(session.droppedEnv, ['V127', 'V128', 'V129', 'LISTEN_FDS'], 'what the client left out, then what the server dropped');
  session.input.write('a\nb');
  session.input.end();
  const typed = await conn.inputUntilEnd();
  assert.is(typed, 'a\nb', 'every byte before END_INPUT');
  const accounting = { cpuUsageNsec: 1, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: 1, inputBytes: 3, outputBytes: 0, durationUsec: 9 };
  session.stop().catch(() => {});
  await conn.expect('stop');
  conn.send({ type: 'stopped', end: { code: 2, status: 1, result: 'success', accounting } });
  assert.equal(await session.exit, { reason: 'stopped', code: 2, status: 1, result: 'success', accounting });
  server.close();
});

test('version 1: input.end() sends nothing (no end of input exists there)', async () => {
  const server = new TestServer();
  const { session, conn } = await startedSession(server);
  assert.is(session.canEndInput, false);
  session.input.end('x');
  assert.is((await conn.expect('input')).data.toString(), 'x');
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success' });
  await session.exit;
  assert.is(await conn.readFrame().then((r) => r.frame.type, () => 'closed'), 'closed', 'no END_INPUT before the close');
  server.close();
});

test('an ERROR during the handshake rejects with its code name and the server text', async () => {
  const server = new TestServer();
  const accepted = server.accept();
  const connecting = connect(server.path);
  const conn = await accepted;
  await conn.expect('hello');
  conn.send({ type: 'error', code: ErrorCode.AUTHENTICATION, message: 'authentication failed' });
  const error = await rejection(connecting);
  assert.is(error.code, 'AUTHENTICATION');
  assert.is(error.wireCode, ErrorCode.AUTHENTICATION);
  assert.is(error.remote, true);
  assert.is(error.message, 'authentication failed');
  server.close();
});

test('connecting to a missing socket rejects with CONNECT and the errno', async () => {
  const server = new TestServer();
  const error = await rejection(connect(`${server.dir}/nothing-here.sock`));
  assert.is(error.code, 'CONNECT');
  assert.is(error.errno, 'ENOENT');
  server.close();
});

test('a socket served by another account than root is refused before a byte is sent (the environment and cwd fd go only to root)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-client-impostor-'));
  chmodSync(dir, 0o777);
  const path = join(dir, 'supervisor.sock');
  // An impostor of another account listens where a client was pointed (a socket path it could create),
  // and says how many bytes the first connection brought.
  const impostor = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '/usr/bin/python3', '-c', IMPOSTOR, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  let said = '';
  const listening = new Promise<void>((resolve, reject) => {
    impostor.stdout!.on('data', (chunk: Buffer) => {
      said += chunk;
      if (said.includes('listening')) resolve();
    });
    impostor.once('exit', () => reject(new Error(`the impostor exited: ${said}`)));
  });
  try {
    await listening;
    const error = await rejection(connect(path, { timeoutMs: 5000 }));
    assert.is(error.code, 'SERVER_UID');
    assert.match(error.message, 'uid 65534');
    await once(impostor, 'exit');
    assert.match(said, 'received 0 bytes');
  } finally {
    impostor.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

const IMPOSTOR = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(1)
print("listening", flush=True)
conn, _ = s.accept()
conn.settimeout(10)
got = b""
try:
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            break
        got += chunk
except socket.timeout:
    pass
print(f"received {len(got)} bytes", flush=True)
`;

test('START carries the cwd fd (same dev/ino), its fields, and the client closes its own copy', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 1);
  const starting = client.start({ argv: ['bash', '-l'], cwd: server.dir, env: { TERM: 'xterm' }, rows: 30, cols: 100 });
  const start = await conn.expect('start', 1);
  const want = statSync(server.dir, { bigint: true });
  assert.is(start.fds.length, 1, 'exactly one fd rode on START');
  const got = fstatSync(start.fds[0]!, { bigint: true });
  assert.ok(got.isDirectory());
  assert.is(got.dev, want.dev);
  assert.is(got.ino, want.ino);
  assert.is(start.cwdDev, want.dev);
  assert.is(start.cwdIno, want.ino);
  assert.equal(start.argv, ['bash', '-l']);
  assert.equal(start.env, [{ name: 'TERM', value: 'xterm' }]);
  assert.is(start.rows, 30);
  assert.is(start.cols, 100);
  assert.is(fdsOn(server.dir), 1, "only the server's received fd is open on the directory");
  closeSync(start.fds[0]!);
  conn.send({ type: 'started', mainPid: 99, unit: 'opencode-pty-session-7.service' });
  const session = await starting;
  assert.is(session.mainPid, 99);
  assert.is(session.unit, 'opencode-pty-session-7.service');
  session.close();
  server.close();
});

test('a cwd that is not a directory fails before anything is sent', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 1);
  const error = await rejection(client.start({ argv: ['sh'], cwd: server.path }));
  assert.is(error.code, 'CWD');
  assert.is(error.errno, 'ENOTDIR');
  assert.ok(conn.nothingPending(), 'no START went out');
  client.close();
  server.close();
});

test('an ERROR answering START rejects start() with its code and text', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 1);
  const starting = client.start({ argv: ['sh'], cwd: server.dir });
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  conn.send({ type: 'error', code: ErrorCode.SESSION_LIMIT, message: 'session limit reached' });
  const error = await rejection(starting);
  assert.is(error.code, 'SESSION_LIMIT');
  assert.is(error.message, 'session limit reached');
  server.close();
});

test('OUTPUT credit returns only as the consumer reads, and nothing is lost meanwhile', async () => {
  const server = new TestServer();
  const { session, conn } = await startedSession(server);
  const chunk = Limits.MAX_IO_PAYLOAD;
  const sent: Buffer[] = [];
  for (let i = 0; i < Limits.INITIAL_WINDOW / chunk; i++) {
    const data = Buffer.alloc(chunk, 0x41 + i);
    sent.push(data);
    conn.send({ type: 'output', data });
  }
  await until(() => session.output.readableLength === Limits.INITIAL_WINDOW, 'the whole window buffered');
  // The client sends CREDIT synchronously when it grants: none may be waiting while nobody has read.
  assert.ok(conn.nothingPending(), 'no CREDIT before the consumer reads');
  // Bun's read() returns one buffered chunk at a time where Node's returns all: read until empty.
  const reads: Buffer[] = [];
  for (let read = session.output.read() as Buffer | null; read; read = session.output.read() as Buffer | null) reads.push(read);
  assert.ok(Buffer.concat(reads).equals(Buffer.concat(sent)), 'every byte, in order');
  let credited = 0;
  while (credited < Limits.INITIAL_WINDOW) credited += (await conn.expect('credit')).bytes;
  assert.is(credited, Limits.INITIAL_WINDOW, 'credit for exactly what was read');
  // The window is open again: more OUTPUT is accepted.
  conn.send({ type: 'output', data: Buffer.from('more') });
  await until(() => session.output.readableLength === 4, 'more output buffered');
  assert.is(session.ended, false);
  session.close();
  server.close();
});

test('a server overrunning the window is a FLOW protocol error', async () => {
  const server = new TestServer();
  const { session, conn } = await startedSession(server);
  for (let i = 0; i < Limits.INITIAL_WINDOW / Limits.MAX_IO_PAYLOAD; i++) {
    conn.send({ type: 'output', data: Buffer.alloc(Limits.MAX_IO_PAYLOAD) });
  }
  conn.send({ type: 'output', data: Buffer.from('!') });
  const error = await rejection(session.exit);
  assert.is(error.code, 'FLOW');
  assert.is(error.remote, false);
  server.close();
});

test('INPUT stops at the granted window and continues on CREDIT', async () => {
  const server = new TestServer();
  const { session, conn } = await startedSession(server);
  const data = Buffer.alloc(Limits.INITIAL_WINDOW + 1000, 0x62);
  assert.is(session.write(data), false, 'backpressure: more than the window waits');
  let received = 0;
  while (received < Limits.INITIAL_WINDOW) {
    const input = await conn.expect('input');
    assert.ok(input.data.length <= Limits.MAX_IO_PAYLOAD);
    received += input.data.length;
  }
  assert.is(received, Limits.INITIAL_WINDOW);
  assert.ok(conn.nothingPending(), 'nothing beyond the window was sent');
  const drained = once(session.input, 'drain');
  conn.send({ type: 'credit', bytes: 4096 });
  const rest = await conn.expect('input');
  assert.is(rest.data.length, 1000);
  await drained;
  session.close();
  server.close();
});

test('control frames go out at once; STOP resolves stop() and exit at STOPPED', async () => {
  const server = new TestServer();
  const { session, conn } = await startedSession(server);
  session.resize(50, 132);
  session.signal(2);
  const stopping = session.stop();
  const resize = await conn.expect('resize');
  assert.is(resize.rows, 50);
  assert.is(resize.cols, 132);
  assert.is((await conn.expect('signal')).signal, 2);
  await conn.expect('stop');
  conn.send({ type: 'stopped' });
  await stopping;
  const end = await session.exit;
  assert.equal(end, { reason: 'stopped', code: 0, status: 0, result: 'stopped' });
  assert.throws(() => session.signal(65), (error: ClientError) => error.code === 'INVALID_ARGUMENT');
  server.close();
});

test('EXIT resolves exit after all output, and the output stream ends', async () => {
  const server = new TestServer();
  const { session, conn } = await startedSession(server);
  const chunks: Buffer[] = [];
  session.output.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = once(session.output, 'end');
  conn.send({ type: 'output', data: Buffer.from('bye\n') });
  conn.send({ type: 'exit', code: 2, status: 2, result: 'signal' });
  const end = await session.exit;
  await ended;
  assert.equal(end, { reason: 'exit', code: 2, status: 2, result: 'signal' });
  assert.is(exitStatus(end), 130);
  assert.is(Buffer.concat(chunks).toString(), 'bye\n');
  server.close();
});

test('an ERROR during the session rejects exit with its code; a hang-up with HANGUP', async () => {
  const server = new TestServer();
  const first = await startedSession(server);
  first.conn.send({ type: 'error', code: ErrorCode.INTERNAL, message: 'supervisor failed' });
  const error = await rejection(first.session.exit);
  assert.is(error.code, 'INTERNAL');
  assert.is(error.message, 'supervisor failed');

  const second = await startedSession(server);
  second.conn.close();
  assert.is((await rejection(second.session.exit)).code, 'HANGUP');
  server.close();
});

test('an fd sent to the client never reaches it: the kernel drops it, the bytes arrive', async () => {
  const server = new TestServer();
  const { session, conn } = await startedSession(server);
  const before = fdsOn(server.dir);
  const stray = openSync(server.dir, 'r');
  conn.socket.write(encodeFrame({ type: 'output', data: Buffer.from('x') }), [stray]);
  const [chunk] = (await once(session.output, 'data')) as [Buffer];
  closeSync(stray);
  assert.is(chunk.toString(), 'x');
  assert.is(fdsOn(server.dir), before, 'no copy of the stray fd was installed in the client');
  session.close();
  server.close();
});

test('a server that accepts and never answers: connect and start reject with TIMEOUT and close', async () => {
  const server = new TestServer();
  const accepted = server.accept();
  const silent = rejection(connect(server.path, { timeoutMs: 50 }));
  const conn = await accepted;
  await conn.expect('hello');
  assert.is((await silent).code, 'TIMEOUT');
  assert.is(await conn.socket.readExact(1, 0).then(() => 'data', () => 'closed'), 'closed', 'the client closed the connection');

  const { client, conn: second } = await handshaken(server, 1);
  const starting = rejection(client.start({ argv: ['sh'], cwd: server.dir, timeoutMs: 50 }));
  const start = await second.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.is((await starting).code, 'TIMEOUT');
  server.close();
});

test('exitStatus maps systemd codes as a shell does', () => {
  assert.is(exitStatus({ code: 1, status: 0 }), 0);
  assert.is(exitStatus({ code: 1, status: 3 }), 3);
  assert.is(exitStatus({ code: 2, status: 2 }), 130);
  assert.is(exitStatus({ code: 3, status: 11 }), 139);
  assert.is(exitStatus({ code: 0, status: 0 }), 1);
});

test.run();
