// One session end to end against real systemd: a worker process, a transient unit, the session helper.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, renameSync, chownSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, encodeFrame } from '../../src/protocol/index.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, connectWorker, expectNoUnits, sessionUnits, startSession, type RawClient } from './harness.ts';

let sandbox: Sandbox;
let workDir: string; // host path of a directory inside the sandbox, owned by the client
let workInside: string;

test.before(async () => {
  ({ sandbox, workDir, workInside } = await bootWorkerSandbox('worker-session'));
});

test.after(async () => {
  await sandbox?.stop();
});

/** Writes through the raw client, waiting for the socket whenever a few MiB are queued. */
async function writeBounded(client: RawClient, data: Buffer): Promise<void> {
  if (client.socket.writableLength > 4 * 1024 * 1024) await new Promise<void>((resolve) => client.socket.once('drain', () => resolve()));
  client.socket.write(data);
}

test('runs as the client account in exactly the cwd, with only fds 0-2 and the allowlisted environment', async () => {
  const { worker, client } = await startSession(
    sandbox,
    workDir,
    ['/bin/sh', '-c', 'id -u; id -g; pwd; stat -c %i .; ls /proc/self/fd | tr "\\n" " "; echo; env | sort; exit 0'],
    { env: { LANG: 'C.UTF-8', OCPTY_ALLOWED: 'yes', LD_PRELOAD: '/x.so', SECRET: 'no' } },
  );
  const started = await client.waitFor('started');
  assert.match(started.unit, /^opencode-pty-session-[0-9a-f]{32}\.service$/);
  assert.ok(started.mainPid > 1);
  const exit = await client.waitFor('exit');
  assert.equal(exit, { type: 'exit', code: 1, status: 0, result: 'success' });
  const lines = client.output.toString().split('\r\n');
  assert.is(lines[0], String(sandbox.client.uid));
  assert.is(lines[1], String(sandbox.client.gid));
  assert.is(lines[2], workInside);
  assert.is(lines[3], String((await import('node:fs')).statSync(workDir).ino));
  // ls's own directory fd is 3; the program itself has only 0, 1, 2.
  assert.is(lines[4]!.trim(), '0 1 2 3');
  const env = lines.slice(5).filter((line) => /^[A-Z_]+=/.test(line));
  const names = env.map((line) => line.split('=')[0]);
  assert.ok(names.includes('LANG') && names.includes('OCPTY_ALLOWED') && names.includes('TERM'));
  assert.not.ok(names.includes('LD_PRELOAD'));
  assert.not.ok(names.includes('SECRET'));
  assert.ok(env.includes('TERM=xterm-256color'));
  await client.closed();
  await expectNoUnits(sandbox, worker);
});

test('follows the directory fd, not its path, when the directory is renamed before START', async () => {
  const before = join(workDir, 'before');
  mkdirSync(before);
  chownSync(before, sandbox.client.uid, sandbox.client.gid);
  const { worker, client } = await connectWorker(sandbox);
  // Open first (start() opens), then rename, then let the frame go: START is written synchronously,
  // so rename a second directory under the old name instead to prove the fd decides.
  client.start(before, ['/bin/sh', '-c', 'pwd; stat -c %i .']);
  const inode = (await import('node:fs')).statSync(before).ino;
  renameSync(before, join(workDir, 'after'));
  mkdirSync(before);
  await client.waitFor('exit');
  const lines = client.output.toString().split('\r\n');
  assert.is(lines[1], String(inode));
  await expectNoUnits(sandbox, worker);
});

test('a controlling terminal owned by the client; Ctrl-C gives a SIGINT exit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/bash', '--norc', '--noprofile', '-c', 'tty; stat -c %u "$(tty)"; echo ready; exec sleep 100']);
  await client.waitForOutput('ready');
  const lines = client.output.toString().split('\r\n');
  assert.match(lines[0]!, /^\/dev\/pts\/\d+$/);
  assert.is(lines[1], String(sandbox.client.uid));
  client.send({ type: 'input', data: Buffer.from([0x03]) });
  const exit = await client.waitFor('exit');
  assert.equal(exit, { type: 'exit', code: 2, status: 2, result: 'success' });
  await expectNoUnits(sandbox, worker);
});

test('job control works in an interactive shell', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/bash', '--norc', '--noprofile', '-i']);
  // "mo""de" so the terminal's echo of the command line does not look like its output.
  client.send({ type: 'input', data: Buffer.from('sleep 300 &\rjobs; echo "mo""de:$-"\r') });
  await client.waitForOutput('Running');
  const seen = await client.waitForOutput('mode:');
  assert.match(seen, /\[1\]\+\s+Running\s+sleep 300 &/);
  assert.match(seen, /mode:[a-zA-Z]*m/);
  client.send({ type: 'input', data: Buffer.from('kill %1; exit 4\r') });
  const exit = await client.waitFor('exit');
  assert.equal(exit, { type: 'exit', code: 1, status: 4, result: 'exit-code' });
  await expectNoUnits(sandbox, worker);
});

test('floods of RESIZE and SIGNAL frames while the program reads nothing leave the worker standing', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'trap "" WINCH; echo up; read line; stty size; echo "got:${#line}"']);
  await client.waitForOutput('up');
  // Typed-ahead input the program does not read yet keeps the helper from reading its socket.
  client.send({ type: 'input', data: Buffer.from('x'.repeat(8000)) });
  // More RESIZE bytes (10 MB) than any queue of the worker may hold, then SIGNALs.
  const resizes = Buffer.concat(Array.from({ length: 50 }, (_, i) => encodeFrame({ type: 'resize', rows: 10 + i, cols: 100 })));
  for (let i = 0; i < 23_000; i += 1) await writeBounded(client, resizes);
  await writeBounded(client, Buffer.concat(Array.from({ length: 50_000 }, () => encodeFrame({ type: 'signal', signal: 28 }))));
  await writeBounded(client, encodeFrame({ type: 'resize', rows: 33, cols: 100 }));
  client.send({ type: 'input', data: Buffer.from('\r') });
  const seen = await client.waitForOutput('got:');
  assert.match(seen, /33 100/);
  const exit = await client.waitFor('exit');
  assert.is(exit.status, 0);
  await expectNoUnits(sandbox, worker);
});

test('a client that sends START and closes without reading still gets its unit stopped', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'exec sleep 100']);
  client.close();
  await expectNoUnits(sandbox, worker);
});

test('argv with $ ${X} % \\ quotes, spaces and a newline arrives unchanged', async () => {
  const tricky = "$HOME ${X} $$ % \\ ' \" a  b\nline2";
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'printf "<%s>" "$1"', 'sh', tricky]);
  await client.waitFor('exit');
  assert.is(client.output.toString().replace(/\r\n/g, '\n'), `<${tricky}>`);
  await expectNoUnits(sandbox, worker);
});

test('INPUT sent right after START reaches the program; RESIZE is seen by stty size', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'read line; echo "got:$line"; stty size; read again; stty size'], { rows: 30, cols: 100 });
  client.send({ type: 'input', data: Buffer.from('hello\r') });
  await client.waitForOutput('got:hello');
  await client.waitForOutput('30 100');
  client.send({ type: 'resize', rows: 44, cols: 133 });
  client.send({ type: 'input', data: Buffer.from('\r') });
  await client.waitForOutput('44 133');
  const exit = await client.waitFor('exit');
  assert.is(exit.status, 0);
  await expectNoUnits(sandbox, worker);
});

test('INPUT goes through a terminal in canonical mode (README, docs/protocol.md): echoed, a line cut at 4095 bytes, ^U and DEL edit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'IFS= read -r long; IFS= read -r edited; echo "len=${#long} edited=$edited"']);
  await client.waitFor('started');
  client.send({ type: 'input', data: Buffer.concat([Buffer.alloc(5000, 'x'), Buffer.from('\nab\x7fc\x15de\n')]) });
  const seen = await client.waitForOutput('edited=');
  await client.waitFor('exit');
  assert.match(client.output.toString(), /len=4095 edited=de\r\n$/);
  assert.ok(seen.startsWith('x'.repeat(4095)), 'the input is echoed');
  await expectNoUnits(sandbox, worker);
});

test('1 MiB of base64 arrives complete before EXIT status 3', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'head -c 1048576 /dev/urandom | base64; exit 3']);
  const exit = await client.waitFor('exit');
  assert.equal(exit, { type: 'exit', code: 1, status: 3, result: 'exit-code' });
  const exitIndex = client.frames.findIndex((frame) => frame.type === 'exit');
  assert.is(exitIndex, client.frames.length - 1);
  const decoded = Buffer.from(client.output.toString().replace(/\r\n/g, ''), 'base64');
  assert.is(decoded.length, 1048576);
  await expectNoUnits(sandbox, worker);
});

test('SIGNAL ends the program through the unit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'echo up; exec sleep 100']);
  await client.waitForOutput('up');
  client.send({ type: 'signal', signal: 15 });
  const exit = await client.waitFor('exit');
  assert.equal(exit, { type: 'exit', code: 2, status: 15, result: 'success' });
  await expectNoUnits(sandbox, worker);
});

test('STOP on an interactive shell ends it within seconds with STOPPED', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/bash', '--norc', '--noprofile', '-i']);
  client.send({ type: 'input', data: Buffer.from('echo alive\r') });
  await client.waitForOutput('alive');
  const started = Date.now();
  client.send({ type: 'stop' });
  await client.waitFor('stopped');
  assert.ok(Date.now() - started < 5000, `stop took ${Date.now() - started} ms`);
  assert.not.ok(client.frames.some((frame) => frame.type === 'exit'));
  await expectNoUnits(sandbox, worker);
});

test('a missing binary exits 127 with a message', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/nonexistent/program']);
  const exit = await client.waitFor('exit');
  assert.equal(exit, { type: 'exit', code: 1, status: 127, result: 'exit-code' });
  assert.match(client.output.toString(), /nonexistent\/program/);
  await expectNoUnits(sandbox, worker);
});

test('client disconnect stops the unit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'echo up; exec sleep 100']);
  await client.waitForOutput('up');
  assert.is((await sessionUnits(sandbox)).length, 1);
  client.close();
  await expectNoUnits(sandbox, worker);
});

test('a broker shutdown ends the session with an ERROR and no unit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'echo up; exec sleep 100']);
  await client.waitForOutput('up');
  worker.shutdown();
  const error = await client.waitFor('error');
  assert.is(error.code, ErrorCode.SHUTDOWN);
  await expectNoUnits(sandbox, worker);
});

// Ends that meet (docs/architecture.md "When ends meet") with the real unit and helper: the order is
// the machine's, so either documented frame may come, but exactly one, last, and no unit is left.
function lastFrames(client: RawClient) {
  return client.frames.filter((frame) => frame.type === 'exit' || frame.type === 'stopped' || frame.type === 'error');
}

test('a shutdown racing the program\'s exit: exactly one last frame, EXIT or ERROR SHUTDOWN, and no unit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'echo up; read line; exit 3']);
  await client.waitForOutput('up');
  client.send({ type: 'input', data: Buffer.from('\r') });
  worker.shutdown();
  await client.closed();
  const last = lastFrames(client);
  assert.is(last.length, 1, JSON.stringify(last));
  assert.is(client.frames.at(-1), last[0], 'nothing after it');
  const frame = last[0]!;
  assert.ok((frame.type === 'exit' && frame.status === 3) || (frame.type === 'error' && frame.code === ErrorCode.SHUTDOWN), JSON.stringify(frame));
  await expectNoUnits(sandbox, worker);
});

test('STOP racing the program\'s exit: exactly one last frame, EXIT or STOPPED, and no unit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'echo up; read line; exit 3']);
  await client.waitForOutput('up');
  client.send({ type: 'input', data: Buffer.from('\r') });
  client.send({ type: 'stop' });
  await client.closed();
  const last = lastFrames(client);
  assert.is(last.length, 1, JSON.stringify(last));
  assert.is(client.frames.at(-1), last[0], 'nothing after it');
  const frame = last[0]!;
  assert.ok((frame.type === 'exit' && frame.status === 3) || frame.type === 'stopped', JSON.stringify(frame));
  await expectNoUnits(sandbox, worker);
});

test('a killed worker: the unit name was reported before STARTED, and stopping that name leaves no unit', async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'echo up; exec sleep 100']);
  await client.waitForOutput('up');
  await worker.waitFor('started');
  const types = worker.messages.map((message) => message.type);
  assert.ok(types.indexOf('unit') >= 0 && types.indexOf('unit') < types.indexOf('started'), types.join(','));
  const { name } = await worker.waitFor('unit');
  worker.child.kill('SIGKILL');
  await worker.exited;
  // What the broker does with the name it was told (the helper may also end by itself: its worker is gone).
  await sandbox.systemctl('stop', name);
  assert.equal(await sessionUnits(sandbox), []);
  client.close();
});

test.run();
