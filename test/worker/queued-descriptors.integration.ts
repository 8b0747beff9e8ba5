// Descriptors a client leaves queued on its connection, unread: whoever closes the connection last
// (the worker, or PID 1 releasing the unit's stdout) has the kernel release them in its own thread.
// A TCP socket with SO_LINGER and unsent data would hold that close for its linger time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import type { Sandbox } from '../sandbox/index.ts';
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

/** A TCP socket with unsent data and SO_LINGER of an hour, ours alone (Node cannot set SO_LINGER). */
async function lingeringSocket(): Promise<{ fd: number; stop(): void }> {
  const script = [
    'import socket, struct, sys, time',
    'l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()',
    'c = socket.create_connection(l.getsockname()); a, _ = l.accept()',
    'a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); c.setblocking(False)',
    'try:\n    while True: c.send(b"x" * 65536)\nexcept BlockingIOError: pass',
    'u = socket.socket(socket.AF_UNIX, fileno=3)',
    'u.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", c.fileno()))])',
    // Our recvmsg disarms the linger: arm it again on the shared socket once we hold it.
    'print("sent", flush=True); sys.stdin.readline()',
    'c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 3600)); c.close()',
    'print("armed", flush=True); time.sleep(600)',
  ].join('\n');
  const [mine, forPython] = native().socketpair();
  const python = spawn('/usr/bin/python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit', forPython] });
  closeSync(forPython);
  let said = '';
  const heard = (word: string) => new Promise<void>((resolve) => {
    const check = () => said.includes(word) && resolve();
    python.stdout!.on('data', (chunk) => ((said += chunk), check()));
    check();
  });
  await heard('sent');
  const fd = native().recvmsg(mine, Buffer.alloc(1), 0, 1, 1)!.fds[0]!;
  python.stdin!.write('rearm\n');
  await heard('armed');
  closeSync(mine);
  return { fd, stop: () => python.kill('SIGKILL') };
}

test('a lingering socket queued unread behind a stray descriptor: the worker ends and PID 1 still answers', async () => {
  const lingering = await lingeringSocket();
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  await worker.waitFor('ready');
  const [ours, theirs] = native().socketpair();
  worker.handOff(theirs);
  const client = new RawClient(ours);
  client.start(workDir, ['/bin/sleep', '2']);
  await client.waitFor('started');
  // The helper reads the first, ends the session for it (a descriptor outside START) and reads no more.
  const [stray, strayPeer] = native().socketpair();
  closeSync(strayPeer);
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
