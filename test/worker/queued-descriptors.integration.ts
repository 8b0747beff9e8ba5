// Descriptors a client leaves queued on its connection, unread: whoever closes the connection last
// (the worker, or PID 1 releasing the unit's stdout) has the kernel release them in its own thread.
// A TCP socket with SO_LINGER and unsent data would hold that close for its linger time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { lingeringSocket } from '../io/lingering.ts';
import { bootWorkerSandbox, RawClient, WorkerProcess, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-queued-descriptors'));
});

test.after(async () => {
  await sandbox?.stop();
});

function within<T>(promise: Promise<T>, ms: number, otherwise: string): Promise<T | string> {
  return Promise.race([promise, new Promise<string>((resolve) => setTimeout(() => resolve(otherwise), ms).unref())]);
}

test('a lingering socket queued unread behind a stray descriptor: the worker ends and PID 1 still answers', async () => {
  const lingering = await lingeringSocket();
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  await worker.waitFor('ready');
  const [ours, theirs] = native().socketpair();
  worker.handOff(theirs);
  const client = new RawClient(ours);
  // Queued right behind START, before the worker has read it (from then on the kernel refuses them
  // where it has SO_PASSRIGHTS). The helper reads the first, ends the session for it (a descriptor
  // outside START) and reads no more: the lingering one stays queued until the worker's last close.
  const [stray, strayPeer] = native().socketpair();
  closeSync(strayPeer);
  client.start(workDir, ['/bin/sleep', '2']);
  client.socket.write(Buffer.from([0x7f]), [stray]);
  client.socket.write(Buffer.from([0x7f]), [lingering.fd]);
  const closed = await within(client.closed().then(() => 'closed'), 20_000, 'connection still open');
  const exited = await within(worker.exited.then(() => 'exited'), 20_000, 'worker still running');
  const pid1 = await sandbox.exec(['systemctl', 'show', '--property=Version', '--value'], { timeoutMs: 10_000 }).catch((error: Error) => ({ code: -1, stdout: '', stderr: error.message }));
  lingering.stop();
  assert.is(closed, 'closed');
  assert.is(exited, 'exited');
  assert.is(pid1.code, 0, `PID 1: ${pid1.stderr}`);
});

test.run();
