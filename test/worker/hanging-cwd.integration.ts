// A START descriptor on a file system whose getattr never answers (a FUSE directory, support/hang-fs.c)
// cannot freeze or hold a worker. A plain fstat there blocks in an uninterruptible wait once the server
// has read the request: on the event loop it freezes the worker (no deadline, no shutdown), on a pool
// thread it still keeps the process from exiting (even SIGKILL waits), so the broker's slot stays taken.
// The worker must answer from the kernel's cached attributes and never ask that file system at all.
// This test process never examines the descriptor either: the server sends it with its numbers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode } from '../../src/protocol/index.ts';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { installHelper, RawClient, sessionUnits, WorkerProcess, workerConfig } from './harness.ts';
import { bounded } from './stall-report.ts';

const SOURCE = fileURLToPath(new URL('../support/hang-fs.c', import.meta.url));
/** Bounds for what must happen promptly; a frozen worker fails the test here instead of hanging it. */
const BOUND_MS = 15_000;

let sandbox: Sandbox;
let scratch: string;
let binary: string;

/** `promise`, or a failure saying `what` at BOUND_MS (stall-report.ts). */
const within = <T>(promise: Promise<T>, what: string): Promise<T> => bounded(what, promise, async () => '', BOUND_MS);

/** One hanging-fs server: its root directory, and the GETATTRs it leaves unanswered. */
class HangingFs {
  readonly child: ChildProcess;
  readonly exited: Promise<unknown>;
  /** GETATTRs left hanging so far: each is someone blocked examining the directory. */
  hanging = 0;
  stderr = '';
  #socket: FdSocket;

  constructor(mountpoint: string) {
    const [ours, theirs] = native().socketpair();
    // Answers until the root is open and sent, then leaves every GETATTR; its mount in a namespace of its own.
    const options = ['--hang', 'getattr', '--hang-after-open', '--allow-other', '--own-namespace', '--send-root', '--with-parent'];
    this.child = spawn(binary, [...options, mountpoint], { stdio: ['ignore', 'pipe', 'pipe', theirs] });
    closeSync(theirs);
    this.exited = once(this.child, 'exit');
    this.child.stderr!.on('data', (chunk) => (this.stderr += chunk));
    this.child.stdout!.on('data', (chunk: Buffer) => (this.hanging += chunk.toString().split('getattr\n').length - 1));
    this.#socket = new FdSocket(ours);
  }

  /** The root directory's fd (the caller owns it), with the device and inode the server saw. */
  async directory(): Promise<{ fd: number; dev: bigint; ino: bigint }> {
    try {
      const failed = this.exited.then(() => Promise.reject(new Error(`hanging-fs exited: ${this.stderr}`)));
      const { data, fds } = await within(Promise.race([this.#socket.readExact(16, 1), failed]), 'hanging-fs sent no directory');
      assert.is(fds.length, 1);
      return { fd: fds[0]!, dev: data.readBigUInt64LE(0), ino: data.readBigUInt64LE(8) };
    } finally {
      this.#socket.close();
    }
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Kills the server by its PID; its death aborts the connection (whatever still waits on it gets an
   * error) and takes its mount namespace, so nothing stays mounted anywhere. */
  async stop(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }
}

test.before(async () => {
  sandbox = await bootSandbox({ name: 'worker-hanging-cwd' });
  await installHelper(sandbox);
  scratch = mkdtempSync(join(tmpdir(), 'opencode-pty-hanging-cwd-'));
  binary = join(scratch, 'hanging-fs');
  execFileSync('cc', ['-std=c11', '-Wall', '-Wextra', '-Werror', '-O2', '-pthread', '-o', binary, SOURCE]);
});

test.after(async () => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  await sandbox?.stop();
});

let mounts = 0;

/** A worker handed a connection whose START carries a hanging-fs directory (with its own device and
 * inode, or `ids` instead), then `body`. Kills whatever is left by PID: the worker first, then the
 * server, whose death releases a worker stuck on it (a process cannot exit while one of its threads
 * waits on an unanswered FUSE request). */
async function hangingStart(body: (worker: WorkerProcess, client: RawClient, fs: HangingFs) => Promise<void>, ids?: { dev: bigint; ino: bigint }) {
  const mountpoint = join(scratch, `mnt-${++mounts}`);
  mkdirSync(mountpoint);
  const fs = new HangingFs(mountpoint);
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox));
  try {
    const dir = await fs.directory();
    await within(worker.waitFor('ready'), 'the worker never got ready');
    const client = worker.connect();
    const { dev, ino } = ids ?? dir;
    client.send({ type: 'start', rows: 24, cols: 80, cwdDev: dev, cwdIno: ino, argv: ['/bin/true'], env: [] }, [dir.fd]);
    await body(worker, client, fs);
  } finally {
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await fs.stop();
    await worker.exited;
  }
}

/** The session is over: the client got its last frame and EOF, the worker exited by itself while the
 * file system still lives, it was never left waiting on a GETATTR, and no unit is left. */
async function expectNotHeld(worker: WorkerProcess, client: RawClient, fs: HangingFs, reason: string): Promise<void> {
  await within(client.closed(), `the worker never closed the connection; got ${client.frames.map((f) => f.type).join(',')}`);
  assert.is((await within(worker.waitFor('ended'), 'the worker reported no end')).reason, reason);
  assert.is(await within(worker.exited, 'the worker did not exit while its file system lived'), 0, worker.stderr);
  assert.ok(fs.running, `hanging-fs died early: ${fs.stderr}`);
  assert.is(fs.hanging, 0, 'the worker (or something it called) waited on an unanswered GETATTR');
  assert.equal(await sessionUnits(sandbox), []);
}

test('a START directory whose getattr never answers neither freezes the worker nor holds it', async () => {
  await hangingStart(async (worker, client, fs) => {
    // The check passes from the kernel's cached numbers; the session runs there and ends by itself.
    await within(client.closed(), 'no answer: the worker is frozen');
    assert.equal(
      client.frames.map((frame) => frame.type),
      ['started', 'exit'],
      JSON.stringify(client.frames.at(-1)),
    );
    assert.equal(client.frames[1], { type: 'exit', code: 1, status: 0, result: 'success' });
    await expectNotHeld(worker, client, fs, 'exit');
  });
});

test('such a directory with other numbers than START names: BAD_START at once, without asking the file system', async () => {
  await hangingStart(
    async (worker, client, fs) => {
      const error = await within(client.waitFor('error'), 'no ERROR: the worker is frozen');
      assert.is(error.code, ErrorCode.BAD_START, error.message);
      assert.match(error.message, /does not match/);
      await expectNotHeld(worker, client, fs, 'error');
    },
    { dev: 1n, ino: 1n },
  );
});

test.run();
