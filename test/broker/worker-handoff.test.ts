// A hand-off the kernel refuses, against a real worker process whose control socket takes no
// descriptors (SO_PASSRIGHTS off, Linux 6.16): the sendmsg fails as ETOOMANYREFS does when uid 0 has
// too many descriptors in flight. handOff must say so at once, close both descriptors (the client
// then sees its connection end), and the worker, which can be told nothing more, must end.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startWorker } from '../../src/broker/worker-process.ts';
import { closeSync, fstatSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { WorkerHandle } from '../../src/broker/worker-handle.ts';
import { native } from '../../src/native/binding.ts';
import type { Logger } from '../../src/log.ts';

const REFUSING = fileURLToPath(new URL('./fixtures/refusing-worker.ts', import.meta.url));

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

test('a hand-off whose send fails throws, closes the connection and the pidfd, and the worker ends', async () => {
  const lines: string[] = [];
  const log: Logger = (level, message) => void lines.push(`${level}: ${message}`);
  const worker = new WorkerHandle(startWorker(['--import', 'tsx', REFUSING], process.env), log);
  const exitCode = new Promise<number | null>((resolve) => worker.child.once('exit', (code) => resolve(code)));
  try {
    await worker.ready;
  } catch {
    // A kernel without SO_PASSRIGHTS: the refusal cannot be made here (the fixture exited 2).
    assert.is(await exitCode, 2);
    return;
  }
  const [client, handed] = native().socketpair();
  const pidfd = native().pidfdOpen(process.pid);
  assert.throws(() => worker.handOff(1, handed, pidfd, { pid: process.pid, uid: 0, gid: 0, cgroup: null }, 5000, 2), /EPERM/);
  // Ours to close no longer: closed at once, so no later close can hit a number reused meanwhile.
  assert.not.ok(isOpen(handed), 'the handed connection is closed');
  assert.not.ok(isOpen(pidfd), 'the pidfd is closed');
  // The client's end of the connection sees it close (EOF), not a session that never comes.
  assert.is(native().recvmsg(client, Buffer.alloc(1), 0, 1, 0)?.bytes, 0);
  closeSync(client);
  assert.is(await exitCode, 0, 'the worker read EOF and ended');
  await worker.exited;
  assert.ok(lines.some((line) => /control channel failed/.test(line)), lines.join('\n'));
});

test.run();
