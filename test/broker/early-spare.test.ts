// The first spare (started by the broker's entry before the config is loaded) gets the config as
// its first control message: every config the schema accepts, and the normal spawn passes, reaches
// it. And a spare that cannot be started does not end the broker.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EventEmitter } from 'node:events';
import { parseAccounts } from '../../src/config/accounts.ts';
import { ConfigError, validateConfig } from '../../src/config/schema.ts';
import { WorkerPool, type PooledWorker } from '../../src/broker/worker-pool.ts';
import { workerEnvironment } from '../../src/broker/worker-process.ts';
import type { StartedWorker } from '../../src/broker/worker-process.ts';
import { native } from '../../src/native/binding.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { ControlDecoder, MAX_BROKER_MESSAGE } from '../../src/control/broker-worker.ts';

const accounts = parseAccounts('root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/sh\n', 'root:x:0:\nagent:x:1500:\nopencode-pty:x:1800:\n');
const allowAll = (): string | undefined => undefined;

/** A long deny list: valid names, nothing else unusual (about 80 KiB of JSON). */
const raw = {
  client: { user: 'agent', service: 'agent.service' },
  session: { environmentDeny: Array.from({ length: 3000 }, (_, i) => `SECRET_VARIABLE_${String(i).padStart(5, '0')}`) },
};

test('a config the schema accepts reaches the first spare (or is refused as a config)', () => {
  let config;
  try {
    config = validateConfig(raw, accounts, allowAll);
  } catch (error) {
    // A fix that bounds the config's size in the schema passes here.
    assert.instance(error, ConfigError);
    return;
  }
  // The normal spare's path takes it (one environment string, under MAX_ARG_STRLEN, 128 KiB).
  assert.ok(workerEnvironment({}, config, undefined).OPENCODE_PTY_WORKER_CONFIG!.length < 128 * 1024);
  const [ours, theirs] = native().socketpair();
  const child = Object.assign(new EventEmitter(), { pid: 4242, kill: () => true }) as unknown as StartedWorker['child'];
  const early: StartedWorker = { child, control: ours, gone: new Promise(() => undefined) };
  const pool = WorkerPool.of(['/nonexistent'], {}, () => undefined, { worker: early, config });
  try {
    // main.ts start(): the pool adopts the early worker here and sends it the config.
    pool.warm();
    const decoder = new ControlDecoder(MAX_BROKER_MESSAGE);
    const buffer = Buffer.alloc(256 * 1024);
    let messages: unknown[] = [];
    for (let reads = 0; messages.length === 0 && reads < 100; reads += 1) {
      const got = native().recvmsg(theirs, buffer, 0, buffer.length, 0);
      if (got && got.bytes > 0) messages = decoder.push(Buffer.from(buffer.subarray(0, got.bytes)));
    }
    assert.equal(messages, [{ type: 'config', config: JSON.parse(JSON.stringify(config)) }]);
  } finally {
    pool.stop();
    closeQuietly(theirs);
  }
});

/** A started spare whose readiness the test decides (the pool's view of a worker). */
function fakeWorker(pid: number) {
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const worker = {
    ready: Promise.resolve(),
    exited: new Promise<void>(() => undefined),
    settled,
    control: { closed: false },
    child: { pid },
    shutdown: () => undefined,
    renew: () => false,
  } as unknown as PooledWorker;
  return { worker, settle };
}

test('a spare that cannot be started after a session started (socketpair EMFILE) does not end the broker', async () => {
  const first = fakeWorker(1);
  let spawns = 0;
  const pool = new WorkerPool(() => {
    spawns += 1;
    if (spawns === 1) return first.worker;
    throw Object.assign(new Error('socketpair: too many open files'), { code: 'EMFILE' });
  }, () => undefined);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    pool.warm();
    const taken = await pool.take();
    first.settle();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.is(taken, first.worker);
    assert.is(spawns, 2, 'the next spare was tried');
    assert.equal(unhandled, [], 'a rejection nobody handles ends the broker (Node 20 default)');
  } finally {
    process.off('unhandledRejection', onUnhandled);
    pool.stop();
  }
});

test.run();
