// WriteQueue bookkeeping without a socket: order, urgent placement, byte count, fd ownership.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WriteQueue } from '../../src/io/write-queue.ts';

/** Sends everything in `chunk`-byte steps, returning the bytes in wire order. */
function drainAll(queue: WriteQueue, step = Infinity): string {
  let out = '';
  for (let next = queue.peek(); next; next = queue.peek()) {
    const n = Math.min(step, next.data.length - next.offset);
    out += next.data.subarray(next.offset, next.offset + n).toString();
    queue.consume(n);
  }
  return out;
}

test('writes leave in order and the byte count follows them', () => {
  const queue = new WriteQueue();
  queue.push(Buffer.from('abc'));
  queue.push(Buffer.from('de'));
  assert.is(queue.bytes, 5);
  queue.consume(2);
  assert.is(queue.bytes, 3);
  assert.is(drainAll(queue), 'cde');
  assert.is(queue.bytes, 0);
  assert.ok(queue.isEmpty);
});

test('urgent frames go ahead of unstarted writes, in their own order', () => {
  const queue = new WriteQueue();
  queue.push(Buffer.from('D1'));
  queue.push(Buffer.from('D2'));
  queue.pushUrgent(Buffer.from('U1'));
  queue.pushUrgent(Buffer.from('U2'));
  assert.is(drainAll(queue), 'U1U2D1D2');
});

test('an urgent frame never lands inside a partly sent write', () => {
  const queue = new WriteQueue();
  queue.push(Buffer.from('DATA'));
  queue.push(Buffer.from('MORE'));
  queue.consume(1);
  queue.pushUrgent(Buffer.from('u'));
  assert.is(drainAll(queue, 1), 'ATAuMORE');
});

test('fds ride only on the first send of their write and are handed back once sent', () => {
  const queue = new WriteQueue();
  queue.push(Buffer.from('xy'), [7, 8]);
  assert.equal(queue.peek()?.fds, [7, 8]);
  assert.equal(queue.consume(1), [7, 8]);
  assert.equal(queue.peek()?.fds, [], 'not attached again to the rest');
  assert.equal(queue.consume(1), []);
});

test('clear() returns the fds never sent', () => {
  const queue = new WriteQueue();
  queue.push(Buffer.from('a'), [3]);
  queue.push(Buffer.from('b'), [4]);
  queue.consume(1);
  assert.equal(queue.clear(), [4]);
  assert.is(queue.bytes, 0);
});

test('discardUnstarted keeps a partly sent head and drops the rest with their fds', () => {
  const queue = new WriteQueue();
  queue.push(Buffer.from('abcd'));
  queue.push(Buffer.from('ef'), [7]);
  queue.consume(1);
  queue.pushUrgent(Buffer.from('U'));
  assert.equal(queue.discardUnstarted(), [7]);
  assert.is(queue.bytes, 3);
  assert.equal(queue.peek()!.data.subarray(queue.peek()!.offset).toString(), 'bcd');
  queue.consume(3);
  assert.ok(queue.isEmpty);
  queue.push(Buffer.from('x'));
  assert.equal(queue.discardUnstarted(), []);
  assert.ok(queue.isEmpty);
  assert.is(queue.bytes, 0);
});

test.run();
