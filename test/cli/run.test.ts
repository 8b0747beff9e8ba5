// The CLI as a process (no terminal) against the in-test server: stdout carries only output, exit status as a shell's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestServer, type ServerConnection } from '../client/test-server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The CLI runs on the runtime of this suite: Bun runs TypeScript itself, Node through tsx. */
function runtimeArgs(script: string): string[] {
  return process.versions.bun ? [script] : ['--import', 'tsx', script];
}

interface Outcome {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; `feed` gets its stdin while it runs. With `fd3`, a pipe is its fd 3 and `fd3` our end of it. */
function spawnCli(args: string[], env: Record<string, string> = {}, feed?: (stdin: NodeJS.WritableStream) => void, withFd3 = false) {
  const child = spawn(process.execPath, [...runtimeArgs('src/cli/main.ts'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: [feed ? 'pipe' : 'ignore', 'pipe', 'pipe', ...(withFd3 ? (['pipe'] as const) : [])],
  });
  if (feed) feed(child.stdin!);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const outcome = new Promise<Outcome>((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
  return { outcome, fd3: child.stdio[3] as NodeJS.WritableStream | null };
}

function cli(args: string[], env: Record<string, string> = {}, feed?: (stdin: NodeJS.WritableStream) => void): Promise<Outcome> {
  return spawnCli(args, env, feed).outcome;
}

/** Serves one session: handshake, START (fd closed), STARTED; returns the START frame and the connection. */
async function serveStart(server: TestServer, version = 1) {
  const conn: ServerConnection = await server.accept();
  await conn.handshake(version);
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  conn.send({ type: 'started', mainPid: 1234, unit: 'opencode-pty-session-1.service', programPid: 1235, droppedEnv: [] });
  return { conn, start };
}

test('run relays OUTPUT to stdout and exits with the status of an exited program', async () => {
  const server = new TestServer();
  const running = cli(['run', '--socket', server.path, '--env', 'LANG=C.UTF-8', '--', 'x', '-y'], { TERM: 'xterm-256color', SECRET: 'no' });
  const { conn, start } = await serveStart(server);
  assert.equal(start.argv, ['x', '-y']);
  assert.equal(
    start.env.map(({ name, value }) => `${name}=${value}`).sort(),
    ['LANG=C.UTF-8', 'TERM=xterm-256color'],
    'only TERM from the caller, plus --env',
  );
  assert.is(start.rows, 24, 'no terminal: the default size');
  conn.send({ type: 'output', data: Buffer.from('hi\n') });
  conn.send({ type: 'exit', code: 1, status: 3, result: 'exit-code' });
  const outcome = await running;
  assert.is(outcome.stdout, 'hi\n');
  assert.is(outcome.status, 3);
  assert.is(outcome.stderr, '');
  server.close();
});

test('a program killed by a signal exits 128 + the signal', async () => {
  const server = new TestServer();
  const running = cli(['run', '--socket', server.path, '--', 'x']);
  const { conn } = await serveStart(server);
  conn.send({ type: 'exit', code: 2, status: 2, result: 'signal' });
  const outcome = await running;
  assert.is(outcome.status, 130);
  assert.is(outcome.stdout, '');
  server.close();
});

test('stdin that is not a terminal is passed through as INPUT; the socket comes from the environment', async () => {
  const server = new TestServer();
  const running = cli(['run', 'cat'], { OPENCODE_PTY_SOCKET: server.path }, (stdin) => stdin.end('typed\n'));
  const { conn, start } = await serveStart(server);
  assert.equal(start.argv, ['cat']);
  let typed = '';
  while (typed.length < 'typed\n'.length) typed += (await conn.expect('input')).data.toString();
  assert.is(typed, 'typed\n');
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success' });
  assert.is((await running).status, 0);
  server.close();
});

test('version 2: when piped stdin ends, END_INPUT follows its last byte', async () => {
  const server = new TestServer();
  const running = cli(['run', '--socket', server.path, '--', 'cat'], {}, (stdin) => stdin.end('a\nb\n'));
  const { conn } = await serveStart(server, 2);
  const typed = await conn.inputUntilEnd();
  assert.is(typed, 'a\nb\n');
  const accounting = { cpuUsageNsec: null, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: 4, outputBytes: 0, durationUsec: 1 };
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success', accounting });
  assert.is((await running).status, 0);
  server.close();
});

test('a refused session exits 125 with the reason on stderr only', async () => {
  const server = new TestServer();
  const running = cli(['run', '--socket', server.path, '--', 'x']);
  const conn = await server.accept();
  await conn.expect('hello');
  conn.send({ type: 'error', code: 4, message: 'authentication admission limit reached' });
  const outcome = await running;
  assert.is(outcome.status, 125);
  assert.is(outcome.stdout, '');
  assert.match(outcome.stderr, 'authentication admission limit reached');
  assert.match(outcome.stderr, 'ADMISSION');
  server.close();
});

test('a server that accepts and never answers: the CLI gives up at its deadline with 125', async () => {
  const server = new TestServer();
  const running = cli(['run', '--socket', server.path, '--timeout', '0.2', '--', 'x']);
  const conn = await server.accept();
  await conn.expect('hello');
  const outcome = await running;
  assert.is(outcome.status, 125);
  assert.match(outcome.stderr, 'TIMEOUT');
  server.close();
});

test('--version prints the package version', async () => {
  const outcome = await cli(['--version']);
  assert.is(outcome.status, 0);
  const { version } = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { version: string };
  assert.is(outcome.stdout, `opencode-ptyctl ${version}\n`);
});

test('--help and run --help exit 0 and document every option, and what a terminal does to piped input', async () => {
  for (const args of [['--help'], ['run', '--help']]) {
    const outcome = await cli(args);
    assert.is(outcome.status, 0);
    for (const word of ['run', '--socket', '--cwd', '--env', '--timeout', '--rows', '--cols', '--resize-fd', '--version', 'OPENCODE_PTY_SOCKET', '4095', 'echoed']) {
      assert.match(outcome.stdout, word);
    }
  }
});

test('--rows and --cols give the size in START', async () => {
  const server = new TestServer();
  const running = cli(['run', '--socket', server.path, '--rows', '40', '--cols', '132', '--', 'x']);
  const { conn, start } = await serveStart(server);
  assert.equal([start.rows, start.cols], [40, 132]);
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success' });
  assert.is((await running).status, 0);
  server.close();
});

test('--resize-fd: each "ROWS COLS" line is a RESIZE; a malformed one is reported and skipped; its end changes nothing', async () => {
  const server = new TestServer();
  const { outcome, fd3 } = spawnCli(['run', '--socket', server.path, '--resize-fd', '3', '--', 'x'], {}, undefined, true);
  const { conn } = await serveStart(server);
  fd3!.write('30 100\n');
  assert.equal(await conn.expect('resize'), { type: 'resize', rows: 30, cols: 100, fds: [] });
  fd3!.write('nonsense\n4');
  fd3!.end('0 120\n');
  assert.equal(await conn.expect('resize'), { type: 'resize', rows: 40, cols: 120, fds: [] });
  conn.send({ type: 'output', data: Buffer.from('still on\n') });
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success' });
  const result = await outcome;
  assert.is(result.status, 0);
  assert.is(result.stdout, 'still on\n');
  assert.match(result.stderr, '--resize-fd 3: "nonsense" is not "ROWS COLS"');
  server.close();
});

test('--resize-fd naming a descriptor that is not open, is the runtime\'s own or is write-only: exit 2 before connecting', async () => {
  const server = new TestServer();
  // 9: nothing there, or one of the runtime's own descriptors (close-on-exec, never inherited).
  const unopened = await cli(['run', '--socket', server.path, '--resize-fd', '9', '--', 'x']);
  const writeOnly = openSync(join(server.dir, 'sizes'), 'w');
  const child = spawn(process.execPath, [...runtimeArgs('src/cli/main.ts'), 'run', '--socket', server.path, '--resize-fd', '3', '--', 'x'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe', writeOnly],
  });
  closeSync(writeOnly);
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const [status] = (await once(child, 'close')) as [number];
  const connections = server.connections;
  server.close();
  assert.is(unopened.status, 2);
  assert.match(unopened.stderr, /--resize-fd 9: (not an open file descriptor|.* the runtime's own)/);
  assert.is(status, 2);
  assert.match(stderr, '--resize-fd 3: open for writing only');
  assert.is(connections, 0, 'nothing connected');
});

test('an unknown option prints usage on stderr and exits 2', async () => {
  const outcome = await cli(['run', '--bogus', '--', 'x']);
  assert.is(outcome.status, 2);
  assert.is(outcome.stdout, '');
  assert.match(outcome.stderr, 'unknown option --bogus');
  assert.match(outcome.stderr, 'Usage:');
});

test.run();
