// Tests for watch(): readiness, hang-up, update/close semantics, callback scope, and the loop's lifetime.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { addonPath, native, type FdWatcher, type PollEvents, type WatchInterest } from '../../src/native/binding.ts';
import { closeAll, O_NONBLOCK, fdFlags, runChild } from './fd-helpers.ts';

const addon = native();

/** The first event for `interest` on fd; the watcher is closed from inside its callback. */
function firstEvent(fd: number, interest: WatchInterest): Promise<PollEvents> {
  return new Promise((resolve) => {
    const watcher: FdWatcher = addon.watch(fd, interest, (events) => {
      watcher.close();
      resolve(events);
    });
  });
}

/** Two setImmediate turns: at least one complete poll phase of the loop has run in between. */
async function fullLoopTurn(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Runs a CommonJS script in a fresh Node with the addon as `addon`. */
function runScript(script: string, flags: string[] = []) {
  const prelude = `const addon = require(${JSON.stringify(addonPath())});\n`;
  return runChild(process.execPath, [...flags, '-e', prelude + script]);
}

test('readable fires when the peer writes; watch makes the fd non-blocking (libuv does)', async () => {
  const [a, b] = addon.socketpair();
  try {
    const event = firstEvent(a, { readable: true });
    assert.is(fdFlags(a) & O_NONBLOCK, O_NONBLOCK);
    addon.sendmsg(b, Buffer.from('ping'), 0, 4);
    assert.equal(await event, { readable: true, writable: false, hangup: false, error: false, status: 0 });
  } finally {
    closeAll([a, b]);
  }
});

test('hangup fires when the peer closes, with readable interest off', async () => {
  const [a, b] = addon.socketpair();
  try {
    const event = firstEvent(a, { hangup: true });
    closeSync(b);
    const got = await event;
    assert.is(got.hangup, true);
    assert.is(got.readable, false);
    assert.is(got.error, false);
  } finally {
    closeAll([a]);
  }
});

test('hangup fires on the peer shutting down its writing side only', async () => {
  const [a, b] = addon.socketpair();
  try {
    const event = firstEvent(a, { hangup: true });
    addon.shutdown(b, 'write');
    assert.is((await event).hangup, true);
  } finally {
    closeAll([a, b]);
  }
});

test('writable fires at once on a socket with room', async () => {
  const [a, b] = addon.socketpair();
  try {
    const got = await firstEvent(a, { writable: true });
    assert.is(got.writable, true);
    assert.is(got.readable, false);
  } finally {
    closeAll([a, b]);
  }
});

test('update({}) stops events (level-triggered data stays unread), update(readable) restarts them', async () => {
  const [a, b] = addon.socketpair();
  try {
    addon.sendmsg(b, Buffer.from('x'), 0, 1);
    let count = 0;
    let wake: () => void = () => {};
    const watcher = addon.watch(a, { readable: true }, () => {
      count += 1;
      wake();
    });
    await new Promise<void>((resolve) => (wake = resolve));
    // Without update({}) the unread byte fires again on the next poll phase: the control case.
    await fullLoopTurn();
    assert.ok(count >= 2, `fired ${count} times`);
    watcher.update({});
    const stoppedAt = count;
    await fullLoopTurn();
    await fullLoopTurn();
    assert.is(count, stoppedAt);
    const again = new Promise<void>((resolve) => (wake = resolve));
    watcher.update({ readable: true });
    await again;
    assert.is(count, stoppedAt + 1);
    watcher.close();
  } finally {
    closeAll([a, b]);
  }
});

test('close() is idempotent, stops events, and update() afterwards throws ERR_WATCHER_CLOSED', async () => {
  const [a, b] = addon.socketpair();
  try {
    addon.sendmsg(b, Buffer.from('x'), 0, 1);
    let count = 0;
    const watcher = addon.watch(a, { readable: true }, () => {
      count += 1;
      watcher.close();
      watcher.close(); // re-entrant and repeated
    });
    while (count === 0) await fullLoopTurn();
    await fullLoopTurn();
    assert.is(count, 1);
    watcher.close();
    assert.throws(() => watcher.update({ readable: true }), (e: NodeJS.ErrnoException) => e.code === 'ERR_WATCHER_CLOSED');
  } finally {
    closeAll([a, b]);
  }
});

test('update() from inside the callback switches interest re-entrantly', async () => {
  const [a, b] = addon.socketpair();
  try {
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      const watcher = addon.watch(a, { writable: true }, (events) => {
        if (events.writable) {
          seen.push('writable');
          watcher.update({ readable: true });
          addon.sendmsg(b, Buffer.from('x'), 0, 1);
        } else if (events.readable) {
          seen.push('readable');
          watcher.close();
          resolve();
        }
      });
    });
    assert.equal(seen, ['writable', 'readable']);
  } finally {
    closeAll([a, b]);
  }
});

test('promise microtasks queued in the callback run before the loop moves on', async () => {
  const [a, b] = addon.socketpair();
  try {
    const order: string[] = [];
    await new Promise<void>((resolve) => {
      const watcher = addon.watch(a, { writable: true }, () => {
        watcher.close();
        order.push('callback');
        void Promise.resolve().then(() => order.push('microtask'));
        process.nextTick(() => order.push('tick'));
        setImmediate(() => {
          order.push('immediate');
          resolve();
        });
      });
    });
    assert.equal(order, ['callback', 'tick', 'microtask', 'immediate']);
  } finally {
    closeAll([a, b]);
  }
});

test('watching a libuv-owned or closed fd throws; nothing is left behind', () => {
  const [a, b] = addon.socketpair();
  closeSync(b);
  try {
    assert.throws(() => addon.watch(b, { readable: true }, () => {}), (e: NodeJS.ErrnoException) => e.code === 'EBADF');
    const first = addon.watch(a, { readable: true }, () => {});
    try {
      // Only one uv_poll per fd per loop (libuv's EEXIST), which is also what a libuv-owned fd hits.
      assert.throws(() => addon.watch(a, { readable: true }, () => {}), (e: NodeJS.ErrnoException) => e.code === 'EEXIST');
    } finally {
      first.close();
    }
  } finally {
    closeAll([a]);
  }
});

test('a process exits by itself once its watchers are closed or stopped', async () => {
  const result = await runScript(`
    const [a, b] = addon.socketpair();
    const closed = addon.watch(a, { readable: true }, () => {});
    closed.close();
    closed.close();
    const stopped = addon.watch(b, { writable: true }, () => {});
    stopped.update({});
    addon.sendmsg(b, Buffer.from('x'), 0, 1);
    const [c, d] = addon.socketpair();
    const w = addon.watch(c, { writable: true }, (events) => { console.log('fired', events.writable); w.close(); });
  `);
  assert.is(result.code, 0, result.stderr);
  assert.is(result.stdout, 'fired true\n');
});

test('an active watcher nobody references survives collection and still fires', async () => {
  const result = await runScript(
    `
    const [a, b] = addon.socketpair();
    addon.watch(a, { readable: true }, function (events) { console.log('fired', events.readable); this.close(); });
    gc();
    setImmediate(() => { gc(); addon.sendmsg(b, Buffer.from('x'), 0, 1); });
  `,
    ['--expose-gc'],
  );
  assert.is(result.code, 0, result.stderr);
  assert.is(result.stdout, 'fired true\n');
});

test('a stopped watcher nobody references can be collected', async () => {
  const result = await runScript(
    `
    const [a] = addon.socketpair();
    const ref = new WeakRef(addon.watch(a, { readable: true }, () => {}));
    ref.deref().update({});
    setImmediate(() => { gc(); console.log(ref.deref() === undefined); });
  `,
    ['--expose-gc'],
  );
  assert.is(result.code, 0, result.stderr);
  assert.is(result.stdout, 'true\n');
});

test('a throwing callback reaches uncaughtException like any event callback', async () => {
  const result = await runScript(`
    const [a] = addon.socketpair();
    const w = addon.watch(a, { writable: true }, () => { throw new Error('boom'); });
    process.on('uncaughtException', (error) => { console.log('caught', error.message); w.close(); });
  `);
  assert.is(result.code, 0, result.stderr);
  assert.is(result.stdout, 'caught boom\n');
});

test('a worker thread that ends with an active watcher tears down cleanly', async () => {
  const result = await runScript(`
    const { Worker } = require('node:worker_threads');
    const worker = new Worker(\`
      const addon = require(\${JSON.stringify(${JSON.stringify(addonPath())})});
      const [a] = addon.socketpair();
      addon.watch(a, { readable: true, hangup: true }, () => {});
      require('node:worker_threads').parentPort.postMessage('watching');
    \`, { eval: true });
    worker.on('message', () => void worker.terminate());
    worker.on('exit', (code) => console.log('worker exited', code));
  `);
  assert.is(result.code, 0, result.stderr);
  assert.is(result.stdout, 'worker exited 1\n');
});

test.run();
