// What a worker inherits (nothing systemd meant for the broker alone), and when the pool starts spares.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WorkerPool, workerCommand, type PooledWorker } from '../../src/broker/worker-pool.ts';
import { workerEnvironment } from '../../src/broker/worker-process.ts';
import { testConfig } from '../support/config-fixture.ts';

const config = testConfig();

test('LISTEN_*, NOTIFY_SOCKET and WATCHDOG_* are not passed on; the config and bus address are', () => {
  const env = workerEnvironment(
    {
      PATH: '/usr/bin',
      LISTEN_PID: '1',
      LISTEN_FDS: '1',
      LISTEN_FDNAMES: 'x',
      NOTIFY_SOCKET: '/run/systemd/notify',
      WATCHDOG_USEC: '1000',
      WATCHDOG_PID: '1',
      INVOCATION_ID: 'abc',
    },
    config,
    'unix:path=/x',
  );
  assert.equal(Object.keys(env).sort(), ['INVOCATION_ID', 'OPENCODE_PTY_BUS_ADDRESS', 'OPENCODE_PTY_WORKER_CONFIG', 'PATH']);
  assert.equal(JSON.parse(env.OPENCODE_PTY_WORKER_CONFIG!), config);
  assert.is(env.OPENCODE_PTY_BUS_ADDRESS, 'unix:path=/x');
  assert.not.ok('OPENCODE_PTY_BUS_ADDRESS' in workerEnvironment({ OPENCODE_PTY_BUS_ADDRESS: 'stale' }, config, undefined));
  // The first spare starts before the config is loaded: none in its environment, not even an inherited one.
  assert.not.ok('OPENCODE_PTY_WORKER_CONFIG' in workerEnvironment({ OPENCODE_PTY_WORKER_CONFIG: '{}' }, undefined, undefined));
});

test('in a checkout the worker runs from its TypeScript entry through tsx', () => {
  const command = workerCommand();
  assert.equal(command.slice(0, 2), ['--import', 'tsx']);
  assert.match(command[2]!, /src\/worker\/entry\.ts$/);
});

/** A worker whose readiness and session start the test decides. */
class FakeWorker implements PooledWorker {
  static spawned: FakeWorker[] = [];
  ready: Promise<void>;
  exited: Promise<void>;
  settled: Promise<void>;
  control = { closed: false } as PooledWorker['control'];
  child = { pid: 1000 + FakeWorker.spawned.length } as PooledWorker['child'];
  shutDown = false;
  warmUnit: string | undefined;
  /** Whether its session ended cleanly (renew() then gives it a fresh, ready lease). */
  reusable = false;
  becomeReady!: () => void;
  die!: () => void;
  settle!: () => void;
  exit!: () => void;
  shutDownNow!: Promise<void>;
  #shutDown!: () => void;

  constructor() {
    this.ready = new Promise((resolve, reject) => {
      this.becomeReady = resolve;
      this.die = () => {
        reject(new Error(`worker ${this.child.pid} exited before it was ready`));
        this.settle();
      };
    });
    this.ready.catch(() => undefined);
    this.settled = new Promise((resolve) => (this.settle = resolve));
    this.exited = new Promise((resolve) => (this.exit = resolve));
    this.shutDownNow = new Promise((resolve) => (this.#shutDown = resolve));
    FakeWorker.spawned.push(this);
  }

  shutdown(): void {
    this.shutDown = true;
    this.#shutDown();
  }

  renew(): boolean {
    if (!this.reusable) return false;
    this.reusable = false;
    this.ready = Promise.resolve();
    this.settled = new Promise((resolve) => (this.settle = resolve));
    return true;
  }
}

/** A taken worker whose session ended cleanly, as the broker sees it. */
function endedCleanly(worker: FakeWorker): FakeWorker {
  worker.reusable = true;
  worker.settle();
  return worker;
}

const quiet = () => undefined;
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A fresh pool of fake workers (none spawned yet). */
function freshPool(options?: { idleSpareMs?: number }): WorkerPool<FakeWorker> {
  FakeWorker.spawned = [];
  return new WorkerPool(() => new FakeWorker(), quiet, options);
}

/** A fresh pool warmed, its spare ready and taken: the first worker, in its session. */
async function firstTaken(options?: { idleSpareMs?: number }): Promise<{ pool: WorkerPool<FakeWorker>; first: FakeWorker }> {
  const pool = freshPool(options);
  pool.warm();
  FakeWorker.spawned[0]!.becomeReady();
  return { pool, first: await pool.take() };
}

test('a taken spare is replaced only once its session has started, not during the start', async () => {
  const pool = freshPool();
  pool.warm();
  FakeWorker.spawned[0]!.becomeReady();
  const taken = await pool.take();
  assert.is(taken, FakeWorker.spawned[0]);
  await turn();
  assert.is(FakeWorker.spawned.length, 1, 'no spare starts while the session starts');
  taken.settle();
  await turn();
  assert.is(FakeWorker.spawned.length, 2, 'the next spare starts after STARTED');
  pool.warm();
  assert.is(FakeWorker.spawned.length, 2, 'one spare at a time');
});

test('the idle workers\' warm units are the pool\'s: the spare\'s and the one given back, not a taken one\'s', async () => {
  const { pool, first } = await firstTaken();
  first.warmUnit = 'taken-warm.service';
  assert.equal(pool.warmUnits(), [], 'a taken worker is the sessions\' to claim');
  endedCleanly(first);
  await turn();
  const spare = FakeWorker.spawned[1]!;
  spare.warmUnit = 'spare-warm.service';
  pool.giveBack(first);
  first.warmUnit = 'given-back-warm.service';
  assert.equal(pool.warmUnits(), ['spare-warm.service', 'given-back-warm.service']);
});

test('a take with no spare starts one and waits for it; a second take does not wait for the first session', async () => {
  const pool = freshPool();
  const first = pool.take();
  assert.is(FakeWorker.spawned.length, 1);
  FakeWorker.spawned[0]!.becomeReady();
  await first;
  const second = pool.take();
  assert.is(FakeWorker.spawned.length, 2, 'demand starts a spare at once');
  FakeWorker.spawned[1]!.becomeReady();
  assert.is(await second, FakeWorker.spawned[1]);
  FakeWorker.spawned[0]!.settle();
  await turn();
  assert.is(FakeWorker.spawned.length, 3);
  FakeWorker.spawned[1]!.settle();
  await turn();
  assert.is(FakeWorker.spawned.length, 3, 'still one spare');
});

test('a spare that dies before it is ready is replaced once within the same take', async () => {
  const pool = freshPool();
  const taken = pool.take();
  FakeWorker.spawned[0]!.die();
  await turn();
  assert.is(FakeWorker.spawned.length, 2, 'the replacement starts at once, and only it');
  FakeWorker.spawned[1]!.becomeReady();
  assert.is(await taken, FakeWorker.spawned[1]);
  const next = pool.take();
  await turn();
  FakeWorker.spawned.at(-1)!.die();
  await turn();
  FakeWorker.spawned.at(-1)!.die();
  try {
    await next;
    assert.unreachable('a second death in one take fails it');
  } catch (error) {
    assert.match((error as Error).message, /exited before it was ready/);
  }
});

test('a stopped pool shuts its spare down and starts no more', async () => {
  const pool = freshPool();
  pool.warm();
  pool.stop();
  assert.ok(FakeWorker.spawned[0]!.shutDown);
  pool.warm();
  assert.is(FakeWorker.spawned.length, 1);
  try {
    await pool.take();
    assert.unreachable('take() on a stopped pool');
  } catch (error) {
    assert.match((error as Error).message, /stopped/);
  }
});

test('a worker given back serves the next take before the spare, and no spare starts while it waits', async () => {
  const { pool, first } = await firstTaken();
  first.settle(); // STARTED: the next spare starts
  await turn();
  assert.is(FakeWorker.spawned.length, 2);
  FakeWorker.spawned[1]!.becomeReady();
  pool.giveBack(endedCleanly(first));
  assert.not.ok(first.shutDown);
  assert.is(await pool.take(), first, 'the worker given back, not the spare');
  assert.is(await pool.take(), FakeWorker.spawned[1], 'then the spare');
  assert.is(FakeWorker.spawned.length, 2);
});

test('a take waiting for a booting spare is served by a worker given back meanwhile; the spare stays the spare', async () => {
  const { pool, first } = await firstTaken();
  first.settle(); // STARTED: the next spare starts
  await turn();
  const waiting = pool.take(); // it waits for that spare, still booting
  await turn();
  assert.is(FakeWorker.spawned.length, 2);
  pool.giveBack(endedCleanly(first));
  assert.is(await waiting, first);
  const spare = FakeWorker.spawned[1]!;
  assert.not.ok(spare.shutDown, 'the booting spare is kept');
  spare.becomeReady();
  assert.is(await pool.take(), spare);
  assert.is(FakeWorker.spawned.length, 2, 'no third process');
});

test('a worker that cannot take another session is shut down, and so is a second one given back', async () => {
  const pool = freshPool();
  const workers = [pool.take(), pool.take(), pool.take()];
  await turn();
  for (const worker of FakeWorker.spawned) worker.becomeReady();
  const [a, b, c] = (await Promise.all(workers)) as FakeWorker[];
  pool.giveBack(a!); // its end was not clean: renew() refuses
  assert.ok(a!.shutDown);
  pool.giveBack(endedCleanly(b!));
  pool.giveBack(endedCleanly(c!));
  assert.not.ok(b!.shutDown);
  assert.ok(c!.shutDown, 'one idle worker given back is kept, not two');
  pool.stop();
  assert.ok(b!.shutDown, 'stop() ends the worker given back too');
  pool.giveBack(endedCleanly(b!));
});

test('a worker given back and a spare both idle: after a while the one given back goes, the fresh spare stays', async () => {
  const { pool, first } = await firstTaken({ idleSpareMs: 1 });
  first.settle();
  await turn();
  const spare = FakeWorker.spawned[1]!;
  spare.becomeReady();
  pool.giveBack(endedCleanly(first));
  // The pool's timer does not keep a process alive (the broker's listener does): this one does.
  const alive = setInterval(() => undefined, 1000);
  await first.shutDownNow;
  clearInterval(alive);
  assert.not.ok(spare.shutDown);
  assert.is(await pool.take(), spare);
  assert.is(FakeWorker.spawned.length, 2);
});

test('a worker given back that dies while idle is not handed out', async () => {
  const { pool, first } = await firstTaken();
  pool.giveBack(endedCleanly(first));
  first.exit();
  await turn();
  const next = pool.take();
  await turn();
  assert.is(FakeWorker.spawned.length, 2, 'a spare starts for the take');
  FakeWorker.spawned[1]!.becomeReady();
  assert.is(await next, FakeWorker.spawned[1]);
});

test.run();
