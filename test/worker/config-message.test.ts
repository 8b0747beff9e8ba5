// A worker started without its config (the broker's entry starts the first spare before loading it)
// waits for the config as its first control message: real worker processes, no bus needed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signalWorker, startWorker, workerEnvironment, type StartedWorker } from '../../src/broker/worker-process.ts';
import { encodeControl } from '../../src/control/broker-worker.ts';
import { native } from '../../src/native/binding.ts';
import { testConfig } from '../support/config-fixture.ts';

const ENTRY = fileURLToPath(new URL('../../src/worker/entry.ts', import.meta.url));
/** The build's output (npm test builds first). */
const DIST = fileURLToPath(new URL('../../dist', import.meta.url));
/** No bus listens here: a worker that got its config fails next, connecting, and says so. */
const NO_BUS = 'unix:path=/nonexistent/opencode-pty-test-bus';

/** A worker without a config in its environment; resolves with its exit code and output once it ends. */
function start(): { worker: StartedWorker; ended: Promise<{ code: number | null; output: string }> } {
  const worker = startWorker(['--import', 'tsx', ENTRY], workerEnvironment(process.env, undefined, NO_BUS), 'pipe');
  let output = '';
  worker.child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  worker.child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  const ended = new Promise<{ code: number | null; output: string }>((resolve) => worker.child.once('close', (code) => resolve({ code, output })));
  return { worker, ended };
}

function send(fd: number, message: Parameters<typeof encodeControl>[0]): void {
  const bytes = encodeControl(message);
  assert.is(native().sendmsg(fd, bytes, 0, bytes.length), bytes.length);
}

test('a worker whose broker goes before sending the config ends quietly (exit 0)', async () => {
  const { worker, ended } = start();
  closeSync(worker.control);
  const { code, output } = await ended;
  assert.is(code, 0);
  assert.is(output, '');
});

test('its first message must be the config; anything else ends it, saying so', async () => {
  const { worker, ended } = start();
  send(worker.control, { type: 'shutdown' });
  const { code, output } = await ended;
  closeSync(worker.control);
  assert.is.not(code, 0);
  assert.match(output, /first message was shutdown, not the config/);
});

test('given the config as its first message, the worker goes on to connect to its bus', async () => {
  const { worker, ended } = start();
  const base = testConfig();
  send(worker.control, { type: 'config', config: { ...base, limits: { ...base.limits, operationTimeoutMs: 2000 } } });
  const { code, output } = await ended;
  closeSync(worker.control);
  assert.is.not(code, 0, 'no bus here: it cannot serve');
  assert.match(output, /opencode-pty-test-bus/);
  assert.not.match(output, /not the config/);
});

test('the first spare with no session helper beside it ends before it says ready, saying why', async () => {
  // The built bundle alone, two levels down in a directory of its own: every place the helper is
  // looked for (beside the bundle, and ../build, ../../build of a checkout) is inside it, and empty.
  const root = mkdtempSync(join(tmpdir(), 'opencode-pty-worker-'));
  const alone = join(root, 'a', 'b', 'dist');
  let worker: StartedWorker | undefined;
  try {
    mkdirSync(alone, { recursive: true });
    for (const file of ['worker.cjs', 'worker-main.cjs', 'worker-main.cjs.cache', `${process.platform}-${process.arch}/opencode_pty.node`]) copyFileSync(join(DIST, file), join(alone, basename(file)));
    worker = startWorker([join(alone, 'worker.cjs')], workerEnvironment(process.env, undefined, NO_BUS), 'pipe');
    let output = '';
    worker.child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
    worker.child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
    const code = new Promise<number | null>((resolve) => worker!.child.once('close', (exitCode) => resolve(exitCode)));
    send(worker.control, { type: 'config', config: testConfig() });
    assert.is.not(await code, 0);
    assert.match(output, /session helper opencode-pty-session not found/);
    assert.ok(output.includes(join(alone, 'opencode-pty-session')), 'it looked beside the bundle');
    assert.not.match(output, /opencode-pty-test-bus/, 'it ended before its bus');
    // Nothing came back on the control channel: no 'ready'.
    const buffer = Buffer.alloc(64);
    const got = native().recvmsg(worker.control, buffer, 0, buffer.length, 0);
    assert.is(got?.bytes ?? 0, 0);
  } finally {
    if (worker) {
      signalWorker(worker.child, 'SIGKILL');
      closeSync(worker.control);
    }
    rmSync(root, { recursive: true, force: true });
  }
});

test.run();
