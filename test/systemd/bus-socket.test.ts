// The D-Bus socket on our own addon: bytes both ways, descriptors both ways (SCM_RIGHTS), as dbus-next
// reads them (read(size, null) → { data, fds }), and a missing socket reported as an error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { native } from '../../src/native/index.ts';
import { BusSocket } from '../../src/systemd/bus-socket.ts';

const dir = mkdtempSync(join(tmpdir(), 'ocp-bus-socket-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function listen(name: string): { path: string; accept: () => number; close: () => void } {
  const path = join(dir, name);
  const listener = native().listenUnix(path, 4);
  return { path, accept: () => native().accept(listener), close: () => closeSync(listener) };
}

test('bytes and a descriptor travel both ways; read(size, null) hands the received descriptors over', async () => {
  const server = listen('a');
  const socket = new BusSocket(server.path);
  await once(socket, 'connected');
  const peer = server.accept();
  assert.ok(peer >= 0);
  const file = openSync(join(dir, 'carried'), 'w');
  // Ours → peer: a message with a descriptor.
  socket.write({ data: Buffer.from('hello'), fds: [file] });
  await new Promise((resolve) => setTimeout(resolve, 20));
  const buffer = Buffer.alloc(64);
  const got = native().recvmsg(peer, buffer, 0, buffer.length, 4);
  assert.is(buffer.subarray(0, got!.bytes).toString(), 'hello');
  assert.is(got!.fds.length, 1);
  assert.is(fstatSync(got!.fds[0]!).ino, fstatSync(file).ino, 'the same file arrived');
  // Peer → ours: bytes with that descriptor back.
  native().sendmsg(peer, Buffer.from('world!'), 0, 6, [got!.fds[0]!]);
  await once(socket, 'readable');
  const read = socket.read(6, null) as { data: Buffer; fds: number[] };
  assert.is(read.data.toString(), 'world!');
  assert.is(read.fds.length, 1);
  assert.is(fstatSync(read.fds[0]!).ino, fstatSync(file).ino);
  for (const fd of [file, got!.fds[0]!, read.fds[0]!, peer]) closeSync(fd);
  const closed = once(socket, 'close');
  socket.destroy();
  await closed;
  server.close();
});

test('a write held back by a full socket sends the file it was given, though the caller closed that number and it names another file by then', async () => {
  const server = listen('held');
  const socket = new BusSocket(server.path);
  await once(socket, 'connected');
  const peer = server.accept();
  // More than the socket buffers hold: the rest waits for writable, and so does the next write.
  socket.write({ data: Buffer.alloc(8 * 1024 * 1024, 1) });
  const given = openSync(join(dir, 'given'), 'w');
  const givenIno = fstatSync(given).ino;
  socket.write({ data: Buffer.from('start'), fds: [given] });
  // The caller gives up (a call's timeout) and closes its descriptor; the number is reused at once.
  closeSync(given);
  const other = openSync(join(dir, 'other'), 'w');
  assert.is(other, given, 'the number was reused');
  const buffer = Buffer.alloc(1024 * 1024);
  let fds: number[] = [];
  for (let bytes = 0; bytes < 8 * 1024 * 1024 + 5; ) {
    const got = native().recvmsg(peer, buffer, 0, buffer.length, 4);
    if (got === null) {
      await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    assert.ok(got.bytes > 0, 'no early EOF');
    bytes += got.bytes;
    fds = fds.concat(got.fds);
  }
  assert.is(fds.length, 1);
  assert.is(fstatSync(fds[0]!).ino, givenIno, 'the file the write was given, not the one that took its number');
  for (const fd of [...fds, other, peer]) closeSync(fd);
  const closed = once(socket, 'close');
  socket.destroy();
  await closed;
  server.close();
});

test('descriptors of writes still queued when the socket is destroyed are not left open', async () => {
  const server = listen('queued');
  const socket = new BusSocket(server.path);
  await once(socket, 'connected');
  const peer = server.accept();
  socket.write({ data: Buffer.alloc(8 * 1024 * 1024, 1) });
  const given = openSync(join(dir, 'queued-file'), 'w');
  socket.write({ data: Buffer.from('a'), fds: [given] });
  socket.write({ data: Buffer.from('b'), fds: [given] });
  closeSync(given);
  socket.on('error', () => undefined);
  const before = readdirSync('/proc/self/fd').length;
  const closed = once(socket, 'close');
  socket.destroy();
  await closed;
  // The socket itself and every copy it held are gone.
  assert.ok(readdirSync('/proc/self/fd').length <= before - 1, 'the socket and its copies closed');
  closeSync(peer);
  server.close();
});

test('the peer closing ends the stream', async () => {
  const server = listen('b');
  const socket = new BusSocket(server.path);
  await once(socket, 'connected');
  closeSync(server.accept());
  socket.resume();
  await once(socket, 'end');
  server.close();
});

test('no socket at the path: an error naming connect, no connected', async () => {
  const socket = new BusSocket(join(dir, 'absent'));
  let connected = false;
  socket.on('connected', () => (connected = true));
  const [error] = (await once(socket, 'error')) as [NodeJS.ErrnoException];
  assert.is(error.code, 'ENOENT');
  assert.is(error.syscall, 'connect');
  assert.not.ok(connected);
});

test.run();
