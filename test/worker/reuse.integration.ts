// A worker whose session ended cleanly serves the next one when the broker asks for that (`reuse`),
// and exits after one that was handed over without it, against real systemd.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { DEFAULT_LIMITS } from '../../src/config/schema.ts';
import { bootWorkerSandbox, sessionUnits, WorkerProcess, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-reuse'));
});

test.after(async () => {
  await sandbox?.stop();
});

/** The worker's next message of this type; the ones before it are used up. */
async function next<T extends WorkerProcess['messages'][number]['type']>(worker: WorkerProcess, type: T) {
  const message = await worker.waitFor(type);
  worker.messages.splice(0, worker.messages.indexOf(message) + 1);
  return message;
}

test('one worker serves sessions in a row, each unit gone before its end is reported, and exits after one without reuse', async () => {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  await next(worker, 'ready');
  const pid = worker.child.pid;
  for (const [id, word] of [[1, 'one'], [2, 'two']] as const) {
    const client = worker.connect({ id, reuse: true });
    client.start(workDir, ['/bin/sh', '-c', `echo ${word}`]);
    assert.equal(await client.waitFor('exit'), { type: 'exit', code: 1, status: 0, result: 'success' });
    assert.match(client.output.toString(), word);
    await client.closed();
    const ended = await next(worker, 'ended');
    assert.equal(ended, { type: 'ended', reason: 'exit', reusable: true });
    assert.equal(await sessionUnits(sandbox), [], 'the unit is gone before the end is reported');
    await next(worker, 'ready');
    assert.is(worker.child.pid, pid);
    assert.is(worker.child.exitCode, null, 'the worker waits for the next session');
  }
  const last = worker.connect({ id: 3, reuse: false });
  last.start(workDir, ['/bin/sh', '-c', 'echo three']);
  assert.equal((await last.waitFor('exit')).status, 0);
  assert.equal(await next(worker, 'ended'), { type: 'ended', reason: 'exit', reusable: false });
  assert.is(await worker.exited, 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
});

test('an idle worker waiting for its next session exits on shutdown', async () => {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  await next(worker, 'ready');
  const client = worker.connect({ id: 1, reuse: true });
  client.start(workDir, ['/bin/true']);
  await client.waitFor('exit');
  assert.is((await next(worker, 'ended')).reusable, true);
  await next(worker, 'ready');
  worker.shutdown();
  assert.is(await worker.exited, 0, worker.stderr);
});

test('a session that ends in an error still leaves the worker reusable once its unit is gone', async () => {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  await next(worker, 'ready');
  const failed = worker.connect({ id: 1, reuse: true });
  failed.start(workDir, ['/nonexistent/program']);
  assert.is((await failed.waitFor('exit')).status, 127);
  assert.is((await next(worker, 'ended')).reusable, true);
  await next(worker, 'ready');
  const client = worker.connect({ id: 2, reuse: true });
  client.start(workDir, ['/bin/sh', '-c', 'echo after']);
  await client.waitFor('exit');
  assert.match(client.output.toString(), 'after');
  worker.shutdown();
  assert.is(await worker.exited, 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
});

test('with limits.sessionsPerWorker 1 every session gets a fresh worker, even when the broker offers reuse', async () => {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox, { limits: { ...DEFAULT_LIMITS, sessionsPerWorker: 1 } }));
  await next(worker, 'ready');
  const client = worker.connect({ id: 1, reuse: true });
  client.start(workDir, ['/bin/sh', '-c', 'echo once']);
  assert.equal((await client.waitFor('exit')).status, 0);
  assert.equal(await next(worker, 'ended'), { type: 'ended', reason: 'exit', reusable: false });
  assert.is(await worker.exited, 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
});

test('a worker whose broker goes while it boots exits cleanly and says why', async () => {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  // Before the worker has even connected to the bus: it learns of it once it reads the channel.
  worker.control.close();
  assert.is(await worker.exited, 0);
  assert.match(worker.stderr, "the broker's control channel ended");
  assert.not.match(worker.stderr, /Error|at .*\.ts:/, 'no stack trace');
});

test.run();
