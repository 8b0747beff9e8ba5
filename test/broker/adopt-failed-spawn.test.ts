// An early worker the pool cannot adopt (its config too large to send) is ended by WorkerPool.of.
// If its spawn failed (EAGAIN from fork under TasksMax, EMFILE, ENFILE, EACCES, ENOENT: Node emits
// these as 'error' on a later turn), the ChildProcess keeps its handle until that turn, with no pid,
// and kill() on it then signals whatever the handle's unset pid field holds: traced on Node 20,
// kill(0, SIGKILL) (the broker's whole process group), kill(144, SIGKILL), kill(5308416, SIGKILL)…
// as root. Only a child that has a pid may be signalled.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { WorkerPool } from '../../src/broker/worker-pool.ts';
import type { StartedWorker } from '../../src/broker/worker-process.ts';
import type { Config } from '../../src/config/schema.ts';
import { native } from '../../src/native/binding.ts';
import { closeQuietly } from '../../src/io/fds.ts';

test('an early worker whose spawn failed is never signalled (it has no pid to signal)', async () => {
  const [ours, theirs] = native().socketpair();
  closeQuietly(theirs);
  // ENOENT stands in for the failures a real start can have (startWorker always runs process.execPath).
  const child = spawn('/nonexistent/opencode-pty-worker', [], { stdio: 'ignore' });
  const gone = new Promise<{ why: string; error?: Error }>((resolve) => child.once('error', (error) => resolve({ why: 'could not start', error })));
  const signalled: { pid: number | undefined; signal: unknown }[] = [];
  // Recorded, never sent: the real call would signal an arbitrary process (or ours).
  child.kill = (signal?: NodeJS.Signals | number) => (signalled.push({ pid: child.pid, signal }), false);
  const early: StartedWorker = { child, control: ours, gone };
  // Larger than any broker message may be (MAX_BROKER_MESSAGE): the adoption fails.
  const config = { padding: 'x'.repeat(200 * 1024) } as unknown as Config;
  const pool = WorkerPool.of(['/nonexistent'], {}, () => undefined, { worker: early, config });
  // main.ts start(): the pool adopts the early worker in the very turn the entry started it.
  pool.warm();
  pool.stop();
  await gone;
  assert.equal(signalled.filter((call) => call.pid === undefined), [], 'kill() on a child with no pid');
});

test.run();
