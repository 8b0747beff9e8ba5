// The built command (dist/cli.js, the package's bin) as a user runs it: a CommonJS entry that runs the
// command's bundle from its code cache, with the operator commands in a bundle of their own.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestServer } from '../client/test-server.ts';
import { CACHE_SUFFIX, bundleScript, cachedDataFor } from '../../src/boot/code-cache.ts';

const dist = fileURLToPath(new URL('../../dist/', import.meta.url));

function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(dist, 'cli.js'), ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

test('dist/ says its own scripts are CommonJS, its library and declarations ES modules', () => {
  const type = (path: string) => (JSON.parse(readFileSync(join(dist, path), 'utf8')) as { type: string }).type;
  assert.equal([type('package.json'), type('lib/package.json'), type('types/package.json')], ['commonjs', 'module', 'module']);
});

test("the command's bundle has a code cache made from its source that this Node takes", () => {
  const path = join(dist, 'cli-main.cjs');
  const cache = cachedDataFor(readFileSync(path), readFileSync(path + CACHE_SUFFIX));
  assert.ok(cache, 'made from this source');
  assert.is(bundleScript(readFileSync(path), path, cache).cachedDataRejected, false);
});

test('run: a session through the built command, its output on stdout and its status', async () => {
  const server = new TestServer();
  const running = cli(['run', '--socket', server.path, '--', 'x']);
  const conn = await server.accept();
  await conn.handshake(1);
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.equal(start.argv, ['x']);
  conn.send({ type: 'started', mainPid: 1234, unit: 'opencode-pty-session-1.service', programPid: 1235, droppedEnv: [] });
  conn.send({ type: 'output', data: Buffer.from('hi\n') });
  conn.send({ type: 'exit', code: 1, status: 3, result: 'exit-code' });
  assert.equal(await running, { status: 3, stdout: 'hi\n', stderr: '' });
  server.close();
});

test('an operator command loads from its own bundle: --help, and its usage in the help', async () => {
  const status = await cli(['status', '--help']);
  assert.is(status.status, 0, status.stderr);
  assert.match(status.stdout, /^Usage: opencode-ptyctl status/);
  const help = await cli(['--help']);
  assert.is(help.status, 0, help.stderr);
  assert.match(help.stdout, 'Operator commands (run as root; each has --help):');
});

test('a name Object.prototype has is no command: a usage error, not a crash', async () => {
  for (const name of ['constructor', 'toString']) {
    const ran = await cli([name]);
    assert.is(ran.status, 2, ran.stderr);
    assert.match(ran.stderr, `opencode-ptyctl: unknown command "${name}"`);
  }
});

test.run();
