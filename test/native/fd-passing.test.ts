// Tests for recvmsg/sendmsg: descriptors over real socketpairs, no truncation, EOF, would-block and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { closeAll, fdFlags, leakedSince, O_CLOEXEC, openFds, tempDir } from './fd-helpers.ts';

const addon = native();

function openDirectory(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY);
}

test('a directory fd passes over a socketpair as the same inode, close-on-exec', () => {
  const dir = tempDir();
  const [a, b] = addon.socketpair();
  const original = openDirectory(dir.path);
  try {
    assert.is(addon.sendmsg(a, Buffer.from('S'), 0, 1, [original]), 1);
    const buffer = Buffer.alloc(16);
    const message = addon.recvmsg(b, buffer, 0, buffer.length, 1);
    assert.ok(message);
    assert.is(message.bytes, 1);
    assert.is(buffer.toString('utf8', 0, 1), 'S');
    assert.is(message.fds.length, 1);
    assert.is(message.controlTruncated, false);
    assert.is(message.foreignControl, false);
    assert.is(message.truncated, false);
    const [received] = message.fds;
    assert.is.not(received, original);
    const want = fstatSync(original, { bigint: true });
    const got = fstatSync(received, { bigint: true });
    assert.is(got.dev, want.dev);
    assert.is(got.ino, want.ino);
    assert.ok(got.isDirectory());
    assert.is(fdFlags(received) & O_CLOEXEC, O_CLOEXEC);
    closeSync(received);
  } finally {
    closeAll([a, b, original]);
    dir.remove();
  }
});

test('more fds than maxFds: every one is installed and reported (the kernel drops none in our thread), and nothing leaks', () => {
  const before = openFds();
  const [a, b] = addon.socketpair();
  const sent = Array.from({ length: 6 }, () => openSync('/dev/null', 'r'));
  assert.is(addon.sendmsg(a, Buffer.from('x'), 0, 1, sent), 1);
  closeAll(sent);
  const message = addon.recvmsg(b, Buffer.alloc(8), 0, 8, 1);
  assert.ok(message);
  assert.is(message.controlTruncated, false);
  assert.is(message.fds.length, 6);
  closeAll(message.fds);
  closeAll([a, b]);
  assert.equal(leakedSince(before), []);
});

test('the most one message can carry (253) with maxFds 0: all reported, none truncated', () => {
  const before = openFds();
  const [a, b] = addon.socketpair();
  const sent = Array.from({ length: 253 }, () => openSync('/dev/null', 'r'));
  assert.is(addon.sendmsg(a, Buffer.from('x'), 0, 1, sent), 1);
  closeAll(sent);
  const message = addon.recvmsg(b, Buffer.alloc(8), 0, 8, 0);
  assert.ok(message);
  assert.is(message.controlTruncated, false);
  assert.is(message.fds.length, 253);
  closeAll(message.fds);
  closeAll([a, b]);
  assert.equal(leakedSince(before), []);
});

test('an fd sent when none is expected (maxFds 0) is still seen, so the caller can close it', () => {
  const before = openFds();
  const [a, b] = addon.socketpair();
  const stray = openSync('/dev/null', 'r');
  addon.sendmsg(a, Buffer.from('x'), 0, 1, [stray]);
  closeSync(stray);
  const message = addon.recvmsg(b, Buffer.alloc(8), 0, 8, 0);
  assert.ok(message);
  assert.is(message.fds.length, 1);
  closeAll(message.fds);
  closeAll([a, b]);
  assert.equal(leakedSince(before), []);
});

// Documents the kernel's behaviour (net/unix/af_unix.c, unix_stream_read_generic): a read glues
// fd-less bytes queued before a message with descriptors onto that message, then stops right after
// it. So the fd arrives with the read that ENDS at its message; bytes sent after it come separately.
test('bytes sent before an fd-carrying send arrive in the same read as the fd; later bytes do not', () => {
  const [a, b] = addon.socketpair();
  const passed = openSync('/dev/null', 'r');
  try {
    addon.sendmsg(a, Buffer.from('abc'), 0, 3);
    addon.sendmsg(a, Buffer.from('d'), 0, 1, [passed]);
    addon.sendmsg(a, Buffer.from('efg'), 0, 3);
    const buffer = Buffer.alloc(64);
    const first = addon.recvmsg(b, buffer, 0, buffer.length, 1);
    assert.ok(first);
    assert.is(buffer.toString('utf8', 0, first.bytes), 'abcd');
    assert.is(first.fds.length, 1);
    closeAll(first.fds);
    const second = addon.recvmsg(b, buffer, 0, buffer.length, 1);
    assert.ok(second);
    assert.is(buffer.toString('utf8', 0, second.bytes), 'efg');
    assert.equal(second.fds, []);
  } finally {
    closeAll([a, b, passed]);
  }
});

test('offset and length select the window sent and the window filled', () => {
  const [a, b] = addon.socketpair();
  try {
    assert.is(addon.sendmsg(a, Buffer.from('hello world'), 6, 5), 5);
    const buffer = Buffer.from('..........');
    const message = addon.recvmsg(b, buffer, 3, 5, 0);
    assert.ok(message);
    assert.is(message.bytes, 5);
    assert.is(buffer.toString(), '...world..');
  } finally {
    closeAll([a, b]);
  }
});

test('a Uint8Array view is accepted with its own byte offset', () => {
  const [a, b] = addon.socketpair();
  try {
    const backing = new Uint8Array([0, 0, 104, 105, 0]);
    assert.is(addon.sendmsg(a, new Uint8Array(backing.buffer, 2, 2) as Buffer, 0, 2), 2);
    const target = new Uint8Array(8);
    const message = addon.recvmsg(b, new Uint8Array(target.buffer, 4, 4) as Buffer, 0, 4, 0);
    assert.is(message?.bytes, 2);
    assert.equal([...target], [0, 0, 0, 0, 104, 105, 0, 0]);
  } finally {
    closeAll([a, b]);
  }
});

test('EOF gives bytes 0; nothing queued gives null', () => {
  const [a, b] = addon.socketpair();
  try {
    assert.is(addon.recvmsg(b, Buffer.alloc(4), 0, 4, 0), null);
    addon.shutdown(a, 'write');
    const message = addon.recvmsg(b, Buffer.alloc(4), 0, 4, 0);
    assert.ok(message);
    assert.is(message.bytes, 0);
    assert.equal(message.fds, []);
  } finally {
    closeAll([a, b]);
  }
});

test('sendmsg returns -1 once the socket buffers are full', () => {
  const [a, b] = addon.socketpair();
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let total = 0;
    let result = 0;
    // The two 256 KiB buffers hold well under 64 chunks.
    for (let i = 0; i < 64 && result !== -1; i++) {
      result = addon.sendmsg(a, chunk, 0, chunk.length);
      if (result > 0) total += result;
    }
    assert.is(result, -1);
    assert.ok(total > 0);
  } finally {
    closeAll([a, b]);
  }
});

test('a closed fd throws EBADF with errno and syscall like Node', () => {
  const [a, b] = addon.socketpair();
  closeAll([a, b]);
  try {
    addon.recvmsg(a, Buffer.alloc(4), 0, 4, 0);
    assert.unreachable('recvmsg on a closed fd returned');
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    assert.instance(e, Error);
    assert.is(e.code, 'EBADF');
    assert.is(e.errno, -9);
    assert.is(e.syscall, 'recvmsg');
    assert.is(e.message, 'recvmsg: EBADF (Bad file descriptor)');
  }
  assert.throws(() => addon.sendmsg(a, Buffer.from('x'), 0, 1), (e: NodeJS.ErrnoException) => e.code === 'EBADF' && e.syscall === 'sendmsg');
});

test('a non-socket throws ENOTSOCK; a peer gone makes sendmsg throw EPIPE (no SIGPIPE)', () => {
  const file = openSync('/dev/null', 'r');
  const [a, b] = addon.socketpair();
  try {
    assert.throws(() => addon.recvmsg(file, Buffer.alloc(4), 0, 4, 0), (e: NodeJS.ErrnoException) => e.code === 'ENOTSOCK');
    closeSync(b);
    assert.throws(() => addon.sendmsg(a, Buffer.from('x'), 0, 1), (e: NodeJS.ErrnoException) => e.code === 'EPIPE');
  } finally {
    closeAll([file, a]);
  }
});

test('sending a closed fd throws EBADF and sends nothing', () => {
  const [a, b] = addon.socketpair();
  const gone = openSync('/dev/null', 'r');
  closeSync(gone);
  try {
    assert.throws(() => addon.sendmsg(a, Buffer.from('x'), 0, 1, [gone]), (e: NodeJS.ErrnoException) => e.code === 'EBADF');
    assert.is(addon.recvmsg(b, Buffer.alloc(4), 0, 4, 1), null);
  } finally {
    closeAll([a, b]);
  }
});

test.run();
