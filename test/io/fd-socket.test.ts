// FdSocket over real socketpairs from the addon: exact reads with fds, stray fds, backpressure, urgency, hangup, close.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { once } from 'node:events';
import { native } from '../../src/native/binding.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { IoError } from '../../src/io/io-error.ts';
import { openFdCount } from '../support/fds.ts';
import { rejectionOf } from '../support/rejection.ts';

const openFds = openFdCount;

/** Sends from a raw fd, the whole buffer, optionally with fds (the test's peer, no FdSocket involved). */
function sendRaw(fd: number, data: Buffer, fds?: number[]): void {
  const sent = native().sendmsg(fd, data, 0, data.length, fds);
  assert.is(sent, data.length, 'the kernel took the whole test message');
}

/** Collects everything a raw peer fd receives until `total` bytes have arrived. */
async function receiveAll(fd: number, total: number): Promise<Buffer> {
  const reader = new FdSocket(fd);
  const chunks: Buffer[] = [];
  let got = 0;
  await new Promise<void>((resolve, reject) => {
    reader.on('error', reject);
    reader.startReading((chunk) => {
      chunks.push(chunk);
      got += chunk.length;
      if (got >= total) resolve();
    });
  });
  reader.close();
  return Buffer.concat(chunks);
}

const rejection = rejectionOf(IoError);

test('readExact reads exactly n bytes and accumulates fds across partial reads', async () => {
  const baseline = openFds();
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const passed = openSync('.', 'r');
  const want = fstatSync(passed, { bigint: true });

  sendRaw(b, Buffer.from('he'));
  const pending = socket.readExact(5, 1);
  // The second part carries the fd; the bytes after the five asked for must stay in the kernel.
  sendRaw(b, Buffer.from('lloREST'), [passed]);
  closeSync(passed);
  const first = await pending;
  assert.is(first.data.toString(), 'hello');
  assert.is(first.fds.length, 1);
  const got = fstatSync(first.fds[0]!, { bigint: true });
  assert.is(got.ino, want.ino);
  assert.is(got.dev, want.dev);
  assert.is(first.controlTruncated, false);
  closeSync(first.fds[0]!);

  const rest = await socket.readExact(4, 0);
  assert.is(rest.data.toString(), 'REST');
  assert.equal(rest.fds, []);
  socket.close();
  closeSync(b);
  assert.is(openFds(), baseline);
});

test('readExact rejects EOF before n bytes and closes the fds it had', async () => {
  const baseline = openFds();
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const passed = openSync('.', 'r');
  sendRaw(b, Buffer.from('ab'), [passed]);
  closeSync(passed);
  closeSync(b);
  const error = await rejection(socket.readExact(5, 1));
  assert.is(error.code, 'EOF');
  socket.close();
  assert.is(openFds(), baseline);
});

test('streaming read closes an unexpected fd and reports UNEXPECTED_FD', async () => {
  const baseline = openFds();
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const delivered: Buffer[] = [];
  const failed = once(socket, 'error');
  socket.startReading((chunk) => delivered.push(chunk));
  const passed = openSync('.', 'r');
  sendRaw(b, Buffer.from('x'), [passed]);
  closeSync(passed);
  const [error] = (await failed) as [IoError];
  assert.instance(error, IoError);
  assert.is(error.code, 'UNEXPECTED_FD');
  assert.equal(delivered, [], 'bytes that carried an fd are not delivered');
  socket.close();
  closeSync(b);
  assert.is(openFds(), baseline);
});

test('a write larger than the socket buffers completes with drain after the peer reads', async () => {
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const data = Buffer.alloc(4 * 1024 * 1024);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 0xff;
  socket.write(data);
  assert.ok(socket.writableLength > 0, 'the kernel cannot take 4 MiB at once');
  const drained = once(socket, 'drain');
  const received = await receiveAll(b, data.length);
  await drained;
  assert.is(socket.writableLength, 0);
  assert.ok(received.equals(data), 'every byte arrives in order');
  socket.close();
});

test('write throws QUEUE_FULL beyond its bound and keeps the caller fds', () => {
  const baseline = openFds();
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a, { maxQueuedBytes: 1024 * 1024 });
  socket.write(Buffer.alloc(1024 * 1024)); // the kernel takes some; the rest waits in the queue
  const passed = openSync('.', 'r');
  let caught: unknown;
  try {
    socket.write(Buffer.alloc(1024 * 1024), [passed]);
  } catch (error) {
    caught = error;
  }
  assert.instance(caught, IoError);
  assert.is((caught as IoError).code, 'QUEUE_FULL');
  assert.ok(fstatSync(passed).isDirectory(), "the fd is still open and still the caller's");
  closeSync(passed);
  socket.close();
  closeSync(b);
  assert.is(openFds(), baseline);
});

test('writeUrgent goes before queued data but never inside a partly written write', async () => {
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const big = Buffer.alloc(2 * 1024 * 1024, 'a');
  socket.write(big); // partly sent: the rest must stay contiguous
  socket.write(Buffer.from('B1'));
  socket.write(Buffer.from('B2'));
  socket.writeUrgent(Buffer.from('U1'));
  socket.writeUrgent(Buffer.from('U2'));
  const total = big.length + 8;
  const received = await receiveAll(b, total);
  assert.is(received.length, total);
  assert.ok(received.subarray(0, big.length).equals(big), 'the started write is whole');
  assert.is(received.subarray(big.length).toString(), 'U1U2B1B2');
  socket.close();
});

test('an fd-carrying write goes out in one sendmsg with its whole buffer', async () => {
  const baseline = openFds();
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const peer = new FdSocket(b);
  const passed = openSync('.', 'r');
  const want = fstatSync(passed, { bigint: true });
  socket.write(Buffer.from('START-FRAME'), [passed]); // the socket owns `passed` now
  const read = await peer.readExact(11, 1);
  assert.is(read.data.toString(), 'START-FRAME');
  assert.is(read.fds.length, 1);
  assert.is(fstatSync(read.fds[0]!, { bigint: true }).ino, want.ino);
  closeSync(read.fds[0]!);
  socket.close();
  peer.close();
  assert.is(openFds(), baseline, 'the sender closed its copy once sent');
});

test('hangup is reported while paused, and the data before it is not lost', async () => {
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const delivered: Buffer[] = [];
  socket.startReading((chunk) => delivered.push(chunk));
  socket.pauseReading();
  sendRaw(b, Buffer.from('last words'));
  const hangup = once(socket, 'hangup');
  closeSync(b);
  await hangup;
  assert.equal(delivered, [], 'nothing read while paused');
  const ended = once(socket, 'end');
  socket.resumeReading();
  await ended;
  assert.is(Buffer.concat(delivered).toString(), 'last words');
  socket.close();
});

test('close() is idempotent, fails a pending readExact with CLOSED and leaks nothing', async () => {
  const baseline = openFds();
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const pending = socket.readExact(10, 1);
  // A blocked queue holding an fd that was never sent.
  socket.write(Buffer.alloc(2 * 1024 * 1024));
  socket.write(Buffer.from('x'), [openSync('.', 'r')]);
  assert.ok(socket.writableLength > 0);
  let closes = 0;
  socket.on('close', () => closes++);
  socket.close();
  socket.close();
  assert.is(closes, 1);
  assert.is(socket.fd, -1);
  assert.is((await rejection(pending)).code, 'CLOSED');
  assert.is((await rejection(socket.readExact(1, 0))).code, 'CLOSED');
  assert.throws(() => socket.write(Buffer.from('y')), (error: IoError) => error.code === 'CLOSED');
  closeSync(b);
  assert.is(openFds(), baseline);
});

test('a second reader is refused with BUSY', async () => {
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  const pending = socket.readExact(1, 0);
  assert.is((await rejection(socket.readExact(1, 0))).code, 'BUSY');
  assert.throws(() => socket.startReading(() => {}), (error: IoError) => error.code === 'BUSY');
  sendRaw(b, Buffer.from('z'));
  assert.is((await pending).data.toString(), 'z');
  socket.close();
  closeSync(b);
});

test('writing to a peer that is gone reports PEER_GONE through error', async () => {
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  closeSync(b);
  const failed = once(socket, 'error');
  socket.write(Buffer.from('anyone there?'));
  const [error] = (await failed) as [IoError];
  assert.is(error.code, 'PEER_GONE');
  assert.is(error.errno, 'EPIPE');
  socket.close();
});

test('a peer that closes with our bytes unread (a reset) still delivers everything it sent first', async () => {
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  // The peer gets bytes it never reads, so its close turns into ECONNRESET (POLLERR) on our side.
  sendRaw(a, Buffer.from('unread by the peer'));
  sendRaw(b, Buffer.from('last words'));
  closeSync(b);
  const chunks: Buffer[] = [];
  const outcome = await new Promise<string>((resolve) => {
    socket.on('end', () => resolve('end'));
    socket.on('error', (error) => resolve(error.code));
    socket.startReading((chunk) => chunks.push(chunk));
  });
  assert.is(Buffer.concat(chunks).toString(), 'last words');
  assert.ok(outcome === 'end' || outcome === 'PEER_GONE', outcome);
  socket.close();
});

test('a write that fails because the peer left does not hide what the peer sent before leaving', async () => {
  const [a, b] = native().socketpair();
  const socket = new FdSocket(a);
  sendRaw(b, Buffer.from('final frame'));
  closeSync(b);
  const chunks: Buffer[] = [];
  const errors: string[] = [];
  socket.on('error', (error) => errors.push(error.code));
  const ended = new Promise<void>((resolve) => socket.on('end', () => resolve()));
  // The peer is gone: this write fails (EPIPE) before anything is read.
  socket.write(Buffer.from('credit'));
  socket.startReading((chunk) => chunks.push(chunk));
  await ended;
  assert.is(Buffer.concat(chunks).toString(), 'final frame');
  assert.equal(errors, []);
  socket.close();
});

test('peekByte looks at the next byte and leaves it, and the descriptor riding on it, for the next read', async () => {
  const [ours, theirs] = native().socketpair();
  const socket = new FdSocket(ours);
  const before = openFds();
  const peeked = socket.peekByte();
  // Nothing queued yet: the peek waits for the byte (no busy loop, an event).
  await new Promise((resolve) => setImmediate(resolve));
  const dir = openSync('/', 'r');
  sendRaw(theirs, Buffer.from('XYZ'), [dir]);
  closeSync(dir);
  assert.is(await peeked, 'X'.charCodeAt(0));
  assert.is(openFds(), before, 'no descriptor was installed by the peek');
  assert.is(await socket.peekByte(), 'X'.charCodeAt(0), 'peeked again: still queued');
  const read = await socket.readExact(3, 1);
  assert.is(read.data.toString(), 'XYZ');
  assert.is(read.fds.length, 1, 'the descriptor came with the real read');
  closeSync(read.fds[0]!);
  closeSync(theirs);
  const error = await rejection(socket.peekByte());
  assert.is(error.code, 'EOF');
  socket.close();
});

test("a socket that only peeks and reads frame-exact (the broker's connections) holds no streaming buffer", async () => {
  const pairs = Array.from({ length: 64 }, () => native().socketpair());
  const before = process.memoryUsage().arrayBuffers;
  const sockets = pairs.map(([ours]) => new FdSocket(ours));
  const grown = process.memoryUsage().arrayBuffers - before;
  // Before: 64 KiB each at construction, 4 MiB for these 64.
  assert.ok(grown < 64 * 1024, `${grown} bytes of ArrayBuffers for 64 sockets`);
  sendRaw(pairs[0]![1], Buffer.from('AB'));
  assert.is(await sockets[0]!.peekByte(), 'A'.charCodeAt(0));
  assert.is((await sockets[0]!.readExact(2, 0)).data.toString(), 'AB');
  // A streaming read still gets its buffer, and every byte.
  sendRaw(pairs[1]![1], Buffer.from('streamed'));
  const chunk = await new Promise<Buffer>((resolve) => sockets[1]!.startReading(resolve));
  assert.is(chunk.toString(), 'streamed');
  for (const socket of sockets) socket.close();
  for (const [, theirs] of pairs) closeSync(theirs);
});

test.run();
