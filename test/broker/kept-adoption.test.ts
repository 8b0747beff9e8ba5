// Kept sessions whose worker is gone (src/broker/kept-adoption.ts): adopted by a new worker when root's
// record is valid, requests for them waiting meanwhile; reaped as orphans otherwise, their files removed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KeptAdoption } from '../../src/broker/kept-adoption.ts';
import type { WorkerHandle } from '../../src/broker/worker-handle.ts';
import { KeptStore } from '../../src/kept-store/store.ts';
import type { KeptRecord } from '../../src/kept-store/record.ts';

const UNIT = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const ID = parseInt('0123456789abc', 16);
const RECORD: KeptRecord = { format: 1, unit: UNIT, sessionId: ID, keepMs: 1000, retainBytes: 4096, label: '', program: 'sh', cwd: '/', startedAtMs: 1, rows: 24, cols: 80, programPid: 2, mainPid: 3, origin: 1, service: 'agent.service', detachedSinceMs: 5 };

function setUp(takeWorker: () => Promise<WorkerHandle>) {
  const dir = mkdtempSync(join(tmpdir(), 'kept-adoption-'));
  const store = new KeptStore(dir);
  const reaped: string[] = [];
  const held: { worker: WorkerHandle; service: string | undefined }[] = [];
  const adopting: [number, Promise<void>][] = [];
  const adoption = new KeptAdoption({
    store,
    unitPrefix: 'opencode-pty-',
    takeWorker,
    slots: { tryTake: () => ({ finishing: () => undefined, release: () => undefined }) },
    kept: { adopting: (id, done) => void adopting.push([id, done]) },
    hold: (worker, _slot, service) => void held.push({ worker, service }),
    reap: (unit, why) => void reaped.push(`${unit}: ${why}`),
    log: () => undefined,
  });
  return { dir, store, adoption, reaped, held, adopting, done: () => rmSync(dir, { recursive: true, force: true }) };
}

function fakeWorker(): WorkerHandle & { adopted: unknown[] } {
  let settle = () => undefined as void;
  const worker = {
    adopted: [] as unknown[],
    child: { pid: 99 },
    keptSettled: new Promise<void>((resolve) => (settle = resolve)),
    adoptKept(unit: string, sessionId: number, service: string | undefined) {
      worker.adopted.push([unit, sessionId, service]);
      settle();
    },
  };
  return worker as unknown as WorkerHandle & { adopted: unknown[] };
}

test('a valid record: a worker adopts the session (unit, id, service), held as a session; requests wait until then', async () => {
  const worker = fakeWorker();
  const t = setUp(async () => worker);
  try {
    t.store.write(RECORD);
    assert.ok(t.adoption.adoptOrReap(UNIT, 'left by an earlier run'));
    assert.ok(t.adoption.has(UNIT));
    assert.is(t.adopting.length, 1);
    assert.is(t.adopting[0]![0], ID);
    await t.adopting[0]![1];
    assert.equal(worker.adopted, [[UNIT, ID, 'agent.service']]);
    assert.equal(t.held.map((h) => h.service), ['agent.service']);
    assert.equal(t.reaped, []);
    assert.not.ok(t.adoption.has(UNIT));
  } finally {
    t.done();
  }
});

/** A spare that died unseen: its handover fails at once, as a send to a dead worker does. */
function deadWorker(pid: number): WorkerHandle {
  return {
    child: { pid },
    keptSettled: Promise.resolve(),
    adoptKept() {
      throw new Error('sendmsg failed: EPIPE');
    },
  } as unknown as WorkerHandle;
}

test('a worker that died unseen: the next one is asked; after three such the session is reaped, saying why', async () => {
  const live = fakeWorker();
  const workers = [deadWorker(1), deadWorker(2), live];
  const t = setUp(async () => workers.shift()!);
  try {
    t.store.write(RECORD);
    assert.ok(t.adoption.adoptOrReap(UNIT, 'its worker died'));
    await t.adopting[0]![1];
    assert.equal(t.reaped, [], 'not reaped while a worker could take it');
    assert.equal(live.adopted, [[UNIT, ID, 'agent.service']]);
    workers.push(deadWorker(3), deadWorker(4), deadWorker(5));
    assert.ok(t.adoption.adoptOrReap(UNIT, 'its worker died again'));
    await t.adopting[1]![1];
    assert.match(t.reaped[0]!, /could not be handed to worker 5 \(sendmsg failed: EPIPE\)/);
  } finally {
    t.done();
  }
});

test('no record, or one not valid: reaped saying why, its socket removed; no worker: reaped too', async () => {
  const t = setUp(async () => {
    throw new Error('the worker pool is stopped');
  });
  try {
    writeFileSync(t.store.socketPath(ID), '');
    assert.not.ok(t.adoption.adoptOrReap(UNIT, 'left by an earlier run'));
    assert.match(t.reaped[0]!, /not adopted, it has no record/);
    assert.equal(readdirSync(t.dir), []);
    writeFileSync(t.store.recordPath(ID), JSON.stringify({ ...RECORD, keepMs: -1 }));
    assert.not.ok(t.adoption.adoptOrReap(UNIT, 'x'));
    assert.match(t.reaped[1]!, /keepMs is not valid/);
    t.store.write(RECORD);
    assert.ok(t.adoption.adoptOrReap(UNIT, 'x'));
    await t.adopting[0]![1];
    assert.match(t.reaped[2]!, /no worker could adopt it \(the worker pool is stopped\)/);
    assert.equal(readdirSync(t.dir), []);
  } finally {
    t.done();
  }
});

test.run();
