// The CLI as a process (no terminal) against the in-test server: stdout carries only output, exit status as a shell's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { closeSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TestServer, type ServerConnection } from './test-server.ts';

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

/** Runs the CLI; `feed` gets its stdin while it runs. */
function cli(args: string[], env: Record<string, string> = {}, feed?: (stdin: NodeJS.WritableStream) => void) {
  const child = spawn(process.execPath, [...runtimeArgs('src/cli.ts'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: [feed ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (feed) feed(child.stdin!);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return new Promise<Outcome>((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
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
  let typed = '';
  for (;;) {
    const { frame } = await conn.readFrame();
    if (frame.type === 'end-input') break;
    assert.is(frame.type, 'input');
    typed += (frame as { data: Buffer }).data.toString();
  }
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
  assert.is(outcome.stdout, `opencode-pty ${version}\n`);
});

test('--help exits 0 and documents every option', async () => {
  const outcome = await cli(['--help']);
  assert.is(outcome.status, 0);
  for (const word of ['run', '--socket', '--cwd', '--env', 'OPENCODE_PTY_SOCKET']) assert.match(outcome.stdout, word);
});

test('an unknown option prints usage on stderr and exits 2', async () => {
  const outcome = await cli(['run', '--bogus', '--', 'x']);
  assert.is(outcome.status, 2);
  assert.is(outcome.stdout, '');
  assert.match(outcome.stderr, 'unknown option --bogus');
  assert.match(outcome.stderr, 'Usage:');
});

test.run();
