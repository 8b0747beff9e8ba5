// A worker whose session ended cleanly serves the next one when the broker asks for that (`reuse`),
// and exits after one that was handed over without it, against real systemd.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { encodeControl, type PeerIdentity } from '../../src/control/broker-worker.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { DEFAULT_LIMITS } from '../../src/config/schema.ts';
import { bootWorkerSandbox, RawClient, sessionUnits, WorkerProcess, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-reuse'));
});

test.after(async () => {
  await sandbox?.stop();
});

/** Hands a connection over as the broker does, with or without the offer to take the worker back. */
function handOff(worker: WorkerProcess, id: number, reuse: boolean): RawClient {
  const [ours, theirs] = native().socketpair();
  const pidfd = native().pidfdOpen(process.pid);
  const peer: PeerIdentity = { pid: process.pid, uid: process.getuid!(), gid: process.getgid!(), cgroup: null };
  worker.control.write(encodeControl({ type: 'session', id, peer, deadlineMs: 5000, ...(reuse ? { reuse } : {}) }), [theirs, pidfd]);
  const client = new RawClient(ours);
  client.worker = worker;
  return client;
}

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
    const client = handOff(worker, id, true);
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
  const last = handOff(worker, 3, false);
  last.start(workDir, ['/bin/sh', '-c', 'echo three']);
  assert.equal((await last.waitFor('exit')).status, 0);
  assert.equal(await next(worker, 'ended'), { type: 'ended', reason: 'exit', reusable: false });
  assert.is(await worker.exited, 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
});

test('an idle worker waiting for its next session exits on shutdown', async () => {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  await next(worker, 'ready');
  const client = handOff(worker, 1, true);
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
  const failed = handOff(worker, 1, true);
  failed.start(workDir, ['/nonexistent/program']);
  assert.is((await failed.waitFor('exit')).status, 127);
  assert.is((await next(worker, 'ended')).reusable, true);
  await next(worker, 'ready');
  const client = handOff(worker, 2, true);
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
  const client = handOff(worker, 1, true);
  client.start(workDir, ['/bin/sh', '-c', 'echo once']);
  assert.equal((await client.waitFor('exit')).status, 0);
  assert.equal(await next(worker, 'ended'), { type: 'ended', reason: 'exit', reusable: false });
  assert.is(await worker.exited, 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
});

test.run();
