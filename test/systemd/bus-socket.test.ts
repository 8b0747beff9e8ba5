// The D-Bus socket on our own addon: bytes both ways, descriptors both ways (SCM_RIGHTS), as dbus-next
// reads them (read(size, null) → { data, fds }), and a missing socket reported as an error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, mkdtempSync, openSync, rmSync } from 'node:fs';
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
