// flushed(): "the kernel took it" only when it did. A send that fails outright (the peer has closed)
// empties the queue at once, and one waiting for room fails without any 'drain': both are not sent.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { flushed } from '../../src/worker/final-frame.ts';

test('a write to a peer that has closed is not flushed', async () => {
  const [ours, theirs] = native().socketpair();
  closeSync(theirs);
  const socket = new FdSocket(ours);
  socket.on('error', () => undefined);
  socket.write(Buffer.from('STARTED'));
  assert.is(await flushed(socket, 5000), false);
  socket.close();
});

test('a queue waiting for room whose peer then closes is not flushed, and says so before the deadline', async () => {
  const [ours, theirs] = native().socketpair();
  const socket = new FdSocket(ours);
  socket.on('error', () => undefined);
  // More than the socket buffers hold: the rest waits in our queue for room that never comes.
  socket.write(Buffer.alloc(4 * 1024 * 1024));
  assert.ok(socket.writableLength > 0, 'part of it waits');
  const result = flushed(socket, 60_000);
  closeSync(theirs);
  const started = Date.now();
  assert.is(await result, false);
  assert.ok(Date.now() - started < 30_000, 'not the deadline');
  socket.close();
});

test.run();
