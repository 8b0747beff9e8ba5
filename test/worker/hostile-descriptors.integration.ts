// START descriptors whose close could block: a refused one is closed without holding the worker's
// event loop (BAD_START within the deadline), and the worker still ends its session.
// A FUSE file system mounted with allow_other (as fusermount does with user_allow_other) answers
// nothing once told to; a TCP socket with SO_LINGER and unsent data blocks close(2) for its linger.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, constants, fstatSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { native } from '../../src/native/binding.ts';
import { encodeFrame, type Frame } from '../../src/protocol/index.ts';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { installHelper, WorkerProcess, workerConfig } from './harness.ts';
import { lingeringSocket } from '../io/lingering.ts';

const HANGFS_C = fileURLToPath(new URL('./fixtures/hangfs.c', import.meta.url));
const CLOSE_BOUND_CHILD = fileURLToPath(new URL('./close-bound-child.ts', import.meta.url));
const DEADLINE_MS = 1500;
/** How long past the deadline a worker may take to end; far more than it needs. */
const GRACE_MS = 8000;
let sandbox: Sandbox;
let build: string;

test.before(async () => {
  build = mkdtempSync(join(tmpdir(), 'hangfs-'));
  execFileSync('cc', ['-O1', '-o', join(build, 'hangfs'), HANGFS_C]);
  sandbox = await bootSandbox({ name: 'worker-hostile-descriptors' });
  await installHelper(sandbox);
  await sandbox.install([{ from: join(build, 'hangfs'), to: '/opt/hangfs', mode: 0o755 }]);
  const prep = await sandbox.exec(['/bin/sh', '-c', 'mknod /dev/fuse c 10 229 && chmod 666 /dev/fuse && mkdir /run/hangmnt']);
  assert.is(prep.code, 0, prep.stderr);
});

test.after(async () => {
  await sandbox?.stop();
  if (build) rmSync(build, { recursive: true, force: true });
});

function within<T>(promise: Promise<T>, ms: number, otherwise: string): Promise<T | string> {
  return Promise.race([promise, new Promise<string>((resolve) => setTimeout(() => resolve(otherwise), ms).unref())]);
}

async function mountHangfs() {
  const server = sandbox.spawn(['/opt/hangfs', '/run/hangmnt', String(sandbox.client.uid)]);
  let log = '';
  await new Promise<void>((resolve, reject) => {
    server.stderr!.on('data', (chunk) => {
      log += chunk;
      if (log.includes('mounted')) resolve();
    });
    server.on('exit', () => reject(new Error(`hangfs: ${log}`)));
  });
  return {
    hang: (what: 'getattr' | 'flush') => writeFileSync(`${sandbox.root}/run/hangfs-hang`, what),
    async unmount() {
      server.kill('SIGKILL');
      await sandbox.exec(['/bin/sh', '-c', 'rm -f /run/hangfs-hang; umount -l /run/hangmnt']);
    },
  };
}

/** A worker with a short deadline; START (with `fd`, not closed by us) sent without FdSocket. */
async function startWith(fd: number, stat: { dev: bigint; ino: bigint }) {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  await worker.waitFor('ready');
  const client = worker.connect({ deadlineMs: DEADLINE_MS });
  return {
    worker,
    client,
    send() {
      const start: Frame = { type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['/bin/true'], env: [] };
      const bytes = encodeFrame(start);
      native().sendmsg(client.socket.fd, bytes, 0, bytes.length, [fd]);
    },
  };
}

test('a FUSE regular file whose FLUSH never returns: BAD_START within the deadline, and the worker exits', async () => {
  const fs = await mountHangfs();
  const fd = openSync(`${sandbox.root}/run/hangmnt/f`, constants.O_RDONLY);
  const stat = fstatSync(fd, { bigint: true });
  const { worker, client, send } = await startWith(fd, stat);
  // Our own close would flush too: the server hangs FLUSH only once no exec of ours is left to come.
  fs.hang('flush');
  send();
  // Today: the worker refuses it and closes it on its event loop; close(2) waits on FLUSH without
  // end, so neither BAD_START nor the deadline ever comes.
  const closed = await within(client.closed().then(() => 'closed'), DEADLINE_MS + GRACE_MS, 'connection still open');
  await fs.unmount();
  try {
    closeSync(fd); // ENOTCONN once the server is gone
  } catch {}
  await worker.exited;
  assert.is(closed, 'closed');
});

test('a TCP socket with SO_LINGER and unsent data: BAD_START within the deadline', async () => {
  // An armed lingering socket of ours alone (test/io/lingering.ts).
  const { fd: lingering, stop } = await lingeringSocket();
  const { worker, client, send } = await startWith(lingering, { dev: 1n, ino: 1n });
  send();
  closeSync(lingering); // the worker's close is then the last one: that is the one that lingers
  const closed = await within(client.closed().then(() => 'closed'), DEADLINE_MS + GRACE_MS, 'connection still open');
  stop();
  await worker.exited;
  assert.is(closed, 'closed');
  assert.equal(client.frames.map((frame) => frame.type), ['error']);
});

test('a peer\'s queue of FUSE files whose FLUSH never returns (no SO_PASSRIGHTS): close threads stay bounded, the drain waits, the loop turns, and it finishes once the file system is gone', async () => {
  const fs = await mountHangfs();
  const fd = openSync(`${sandbox.root}/run/hangmnt/f`, constants.O_RDONLY);
  // The child is started (its exec done) before FLUSH hangs: exec closes our close-on-exec copy there.
  const child = spawn(process.execPath, ['--import', 'tsx', CLOSE_BOUND_CHILD], { stdio: ['pipe', 'pipe', 'pipe', fd] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  const exited = once(child, 'exit');
  const line = (n: number) =>
    new Promise<string>((resolve, reject) => {
      const check = () => (stdout.split('\n').length > n ? resolve(stdout.split('\n')[n - 1]!) : undefined);
      child.stdout!.on('data', check);
      check();
      void exited.then(() => reject(new Error(`child exited: ${stderr}`)));
    });
  assert.is(await line(1), 'ready');
  fs.hang('flush');
  child.stdin!.write('go\n');
  const seen = await within(line(2), GRACE_MS, 'nothing printed: the drain held the event loop');
  await fs.unmount(); // every hung FLUSH fails now (ENOTCONN): the threads return, the queue moves
  try {
    closeSync(fd);
  } catch {}
  child.stdin!.write('released\n');
  const after = await within(line(3), GRACE_MS, 'the deferred drain never finished');
  child.stdin!.end();
  await exited;
  const held = JSON.parse(seen) as { closed: boolean; sent: number; newThreads: number; deferred: number; open: boolean; backlog: string | null; threads: number; closing: number; queued: number; max: number };
  assert.is(held.closed, false, 'the drain stopped with the rest left in flight');
  assert.equal([held.deferred, held.open], [1, true], 'the connection waits for its drain');
  assert.ok(held.threads <= held.max, `${held.threads} close threads at once, bound ${held.max}`);
  assert.ok(held.newThreads <= held.max, `${held.newThreads} new threads for ${held.sent} descriptors`);
  assert.ok(held.queued > 0 && held.closing + held.queued < held.sent, 'the rest never left the connection');
  // A broker would stop accepting now (accept-loop.ts): every queued descriptor is open in its table.
  assert.match(held.backlog ?? '', /wait for a close thread/);
  // Before: the rest stayed queued and the connection open until the process exited.
  const done = JSON.parse(after) as { deferred: number; open: boolean; backlog: string | null; closing: number; queued: number };
  assert.equal([done.deferred, done.open, done.backlog, done.closing, done.queued], [0, false, null, 0, 0]);
});

test.run();
