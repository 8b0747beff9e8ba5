// Tests for statCached: statx from the kernel's cached attributes gives exactly fstat's device, inode and type.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, constants, fstatSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../../src/native/binding.ts';
import { tempDir } from './fd-helpers.ts';

const addon = native();

test('a directory: the device and inode fstat reports, and directory true', () => {
  const dir = tempDir();
  const fd = openSync(dir.path, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    const want = fstatSync(fd, { bigint: true });
    const device = `${(want.dev >> 8n) & 0xfffn}:${(want.dev & 0xffn) | ((want.dev >> 12n) & 0xfff00n)}`;
    assert.equal(addon.statCached(fd), { dev: want.dev, ino: want.ino, directory: true, socketOrPipe: false, unixSocket: false, device });
  } finally {
    closeSync(fd);
    dir.remove();
  }
});

test('a regular file is not a directory', () => {
  const dir = tempDir();
  const path = join(dir.path, 'file');
  writeFileSync(path, 'x');
  const fd = openSync(path, 'r');
  try {
    const got = addon.statCached(fd);
    assert.is(got.directory, false);
    assert.is(got.ino, fstatSync(fd, { bigint: true }).ino);
  } finally {
    closeSync(fd);
    dir.remove();
  }
});

test('a closed descriptor throws EBADF, as Node does', () => {
  const dir = tempDir();
  const fd = openSync(dir.path, 'r');
  closeSync(fd);
  dir.remove();
  assert.throws(() => addon.statCached(fd), (error: NodeJS.ErrnoException) => error.code === 'EBADF' && error.syscall === 'statx');
});

test('a non-integer descriptor is a TypeError or RangeError, never a statx', () => {
  assert.throws(() => addon.statCached(-1 as number), RangeError);
  assert.throws(() => addon.statCached('3' as unknown as number), TypeError);
});

test('a socket is a socket or pipe, a regular file is not', () => {
  const [a, b] = addon.socketpair();
  try {
    assert.is(addon.statCached(a).socketOrPipe, true);
    assert.is(addon.statCached(a).directory, false);
    // A Unix socket's close frees its queue (a peer's descriptors) in the closing thread.
    assert.is(addon.statCached(a).unixSocket, true);
  } finally {
    closeSync(a);
    closeSync(b);
  }
});

test('a TCP socket is no Unix socket', async () => {
  const { createServer } = await import('node:net');
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
    assert.is(addon.statCached(fd).socketOrPipe, true);
    assert.is(addon.statCached(fd).unixSocket, false);
  } finally {
    server.close();
  }
});

test.run();
