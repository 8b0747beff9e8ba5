// run --keep, ls and attach as processes (no terminal) against the in-test server speaking version 3.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ErrorCode, sessionsFrame } from '../../src/protocol/index.ts';
import { TestServer, type ServerConnection } from '../client/test-server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const ID = 2882303761517117;
const UNIT = 'opencode-pty-session-a3c9e01b2d4f5aa.service';
const ACCOUNTING = { cpuUsageNsec: 1, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: 0, inputBytes: 0, outputBytes: 5, durationUsec: 1 };

interface Outcome {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], feed?: string) {
  const runtime = process.versions.bun ? ['src/cli/main.ts'] : ['--import', 'tsx', 'src/cli/main.ts'];
  const child = spawn(process.execPath, [...runtime, ...args], { cwd: root, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['pipe', 'pipe', 'pipe'] });
  if (feed !== undefined) child.stdin!.write(feed);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const outcome = new Promise<Outcome>((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
  return { child, outcome };
}

async function accepted(server: TestServer): Promise<ServerConnection> {
  const conn = await server.accept();
  const hello = await conn.handshake(3);
  assert.is(hello.maxVersion, 4);
  return conn;
}

test('run --keep sends keepMs and the label, and names the session id on stderr', async () => {
  const server = new TestServer();
  const { outcome } = cli(['run', '--socket', server.path, '--keep', '10m', '--label', 'build', '--', 'make']);
  const conn = await accepted(server);
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.equal([start.keepMs, start.retainBytes, start.label, start.argv], [600_000, 0, 'build', ['make']]);
  conn.send({ type: 'started', programPid: 4243, mainPid: 4242, unit: UNIT, droppedEnv: [], sessionId: ID });
  conn.send({ type: 'output', data: Buffer.from('done\n') });
  conn.send({ type: 'exit', code: 1, status: 4, result: 'exit-code', accounting: ACCOUNTING });
  const { status, stdout, stderr } = await outcome;
  assert.is(status, 4);
  assert.is(stdout, 'done\n');
  assert.match(stderr, `session ${ID} is kept 10m after this command ends`);
  assert.match(stderr, `opencode-ptyctl attach ${ID}`);
  server.close();
});

test('ls prints the table, and --json the entries', async () => {
  const server = new TestServer();
  const entry = {
    id: ID, state: 3 as const, controllers: 0, observers: 1, rows: 24, cols: 80, programPid: 4243, mainPid: 4242,
    startedAtMs: Date.now() - 1000, keepMs: 600_000, deadlineMs: Date.now() + 300_000, oldest: 0n, next: 2048n,
    fresh: true, endCode: 0, endStatus: 0, origin: 1 as const, label: 'build', program: 'make', cwd: '/srv',
  };
  for (const json of [false, true]) {
    const { outcome } = cli(['ls', '--socket', server.path, ...(json ? ['--json'] : [])]);
    const conn = await accepted(server);
    await conn.expect('list');
    conn.send(sessionsFrame([entry]));
    conn.close();
    const { status, stdout } = await outcome;
    assert.is(status, 0);
    if (json) assert.equal(JSON.parse(stdout)[0].id, ID);
    else assert.match(stdout, new RegExp(`^ID .*\\n${ID} +detached +main +build +make +4243 +2\\.0KiB +0\\+1 +in [45]m`));
  }
  server.close();
});

test('attach --observe replays, sends none of its input, and exits with the program status at EXIT', async () => {
  const server = new TestServer();
  const { outcome } = cli(['attach', '--socket', server.path, '--from', '3', String(ID)], 'typed into an observer\n');
  const conn = await accepted(server);
  const request = await conn.expect('attach');
  assert.equal([request.id, request.fromOffset, request.role, request.rows, request.cols], [ID, 3n, 2, 24, 80]);
  conn.send({ type: 'attached', id: ID, role: 2, generation: 1, oldest: 10n, next: 20n, programPid: 4243, mainPid: 4242, unit: UNIT });
  conn.send({ type: 'truncated', oldest: 10n, dropped: 7n });
  conn.send({ type: 'output', data: Buffer.from('0123456789') });
  conn.send({ type: 'exit', code: 2, status: 15, result: 'signal', accounting: ACCOUNTING });
  const { status, stdout, stderr } = await outcome;
  assert.is(status, 128 + 15);
  assert.is(stdout, '0123456789');
  assert.match(stderr, '7 bytes before offset 10 are no longer retained', stderr);
  assert.is(await conn.readFrame().then((r) => r.frame.type, () => 'closed'), 'closed', 'no INPUT from an observer, only the close');
  server.close();
});

test('attach: SIGTERM detaches (status 0, the session goes on); a refusal is status 125 with its reason', async () => {
  const server = new TestServer();
  const { child, outcome } = cli(['attach', '--control', '--socket', server.path, String(ID)]);
  const conn = await accepted(server);
  assert.is((await conn.expect('attach')).role, 1);
  conn.send({ type: 'attached', id: ID, role: 1, generation: 3, oldest: 0n, next: 0n, programPid: 4243, mainPid: 4242, unit: UNIT });
  conn.send({ type: 'output', data: Buffer.from('prompt$ ') });
  while (!(await new Promise<boolean>((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.includes('$')))))) {}
  child.kill('SIGTERM');
  const { status, stderr } = await outcome;
  assert.is(status, 0);
  assert.match(stderr, `detached from session ${ID} at offset 8`);
  assert.is(await conn.readFrame().then((r) => r.frame.type, () => 'closed'), 'closed', 'no STOP: a detach is a plain close');
  const refused = cli(['attach', '--socket', server.path, '5']);
  const other = await accepted(server);
  await other.expect('attach');
  other.send({ type: 'error', code: ErrorCode.NOT_PERMITTED, message: 'only root and the client service may attach' });
  const result = await refused.outcome;
  assert.is(result.status, 125);
  assert.match(result.stderr, 'only root and the client service may attach (NOT_PERMITTED)');
  server.close();
});

test.run();
