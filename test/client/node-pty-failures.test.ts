// What a node-pty caller that shows only onData sees when its session cannot start: one reason line
// (CRLF; a Buffer with encoding null) before onExit, as node-pty prints its chdir/execvp failures.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type IExitEvent, type IPty } from '../../src/client/node-pty/index.ts';
import { failureLine } from '../../src/client/node-pty/failure-line.ts';
import { ClientError } from '../../src/client/client-error.ts';
import { TestServer } from './test-server.ts';

/** Everything onData delivered until onExit, and the exit. */
function collect(pty: IPty): Promise<{ data: (string | Buffer)[]; exit: IExitEvent; errors: number }> {
  const data: (string | Buffer)[] = [];
  let errors = 0;
  pty.on('error', () => void (errors += 1));
  pty.onData((chunk) => data.push(chunk));
  return new Promise((resolve) => pty.onExit((exit) => resolve({ data, exit, errors })));
}

test('a refusal (session limit): the reason as one CRLF line through onData, then onExit 125; the error event stays', async () => {
  const server = new TestServer();
  const seen = collect(spawn('sh', [], { cwd: server.dir, socketPath: server.path }));
  const conn = await server.accept();
  await conn.expect('hello');
  conn.send({ type: 'error', code: 5, message: 'session limit reached (16)' });
  const { data, exit, errors } = await seen;
  assert.equal(data, ['opencode-pty: session limit reached (16)\r\n']);
  assert.equal(exit, { exitCode: 125, signal: 0 });
  assert.is(errors, 1);
  server.close();
});

test('encoding null: the reason line is a Buffer', async () => {
  const server = new TestServer();
  const seen = collect(spawn('sh', [], { cwd: server.dir, socketPath: server.path, encoding: null }));
  const conn = await server.accept();
  await conn.expect('hello');
  conn.send({ type: 'error', code: 4, message: 'authentication failed' });
  const { data, exit } = await seen;
  assert.is(data.length, 1);
  assert.ok(Buffer.isBuffer(data[0]));
  assert.is(data[0]!.toString(), 'opencode-pty: authentication failed\r\n');
  assert.equal(exit, { exitCode: 125, signal: 0 });
  server.close();
});

test('an unreachable supervisor and a timeout: a visible line each, then onExit 125', async () => {
  const server = new TestServer();
  const unreachable = await collect(spawn('sh', [], { cwd: server.dir, socketPath: `${server.dir}/missing.sock` }));
  assert.is(unreachable.data.length, 1);
  assert.match(unreachable.data[0] as string, /^opencode-pty: .*missing\.sock.*\r\n$/);
  assert.equal(unreachable.exit, { exitCode: 125, signal: 0 });

  // A server that accepts and never answers HELLO.
  const silent = collect(spawn('sh', [], { cwd: server.dir, socketPath: server.path, timeoutMs: 100 }));
  await server.accept();
  const timedOut = await silent;
  assert.is(timedOut.data.length, 1);
  assert.match(timedOut.data[0] as string, /^opencode-pty: [^\r\n]+\r\n$/);
  assert.equal(timedOut.exit, { exitCode: 125, signal: 0 });
  server.close();
});

test('a cwd that does not exist fails visibly by default, nothing is started; cwdFallbackToHome opens $HOME instead', async () => {
  const server = new TestServer();
  const gone = join(server.dir, 'removed');
  const failed = collect(spawn('sh', [], { cwd: gone, socketPath: server.path }));
  const first = await server.accept();
  await first.handshake(2);
  const { data, exit } = await failed;
  assert.is(data.length, 1, JSON.stringify(data));
  assert.match(data[0] as string, new RegExp(`^opencode-pty: [^\\r\\n]*${gone}[^\\r\\n]*ENOENT[^\\r\\n]*\\r\\n$`));
  assert.equal(exit, { exitCode: 125, signal: 0 });

  const home = mkdtempSync(join(tmpdir(), 'node-pty-home-'));
  try {
    const pty = spawn('sh', [], { cwd: gone, socketPath: server.path, cwdFallbackToHome: true, env: { HOME: home, PATH: '/usr/bin:/bin' } });
    const conn = await server.accept();
    await conn.handshake(2);
    const start = await conn.expect('start', 1);
    const dir = fstatSync(start.fds[0]!);
    for (const fd of start.fds) closeSync(fd);
    assert.is(dir.ino, statSync(home).ino, 'the program starts in $HOME');
    pty.kill();
  } finally {
    rmSync(home, { recursive: true, force: true });
    server.close();
  }
});

test('the reason is one line: control characters of a message become spaces, a long one is cut', () => {
  assert.is(failureLine(new ClientError('PROTOCOL', 'bad\nframe\r\x1b[31m')), 'opencode-pty: bad frame [31m\r\n');
  assert.is(failureLine(new Error('x'.repeat(1000))).length, 'opencode-pty: '.length + 300 + 2);
  assert.is(failureLine(''), 'opencode-pty: the session could not start\r\n');
});

test('cwdFallbackToHome must be a boolean', () => {
  assert.throws(() => spawn('sh', [], { cwdFallbackToHome: 'yes' as unknown as boolean }), /cwdFallbackToHome must be a boolean/);
});

test.run();
