// Tests for argument checks: wrong types throw TypeError, bad values RangeError, and nothing crashes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { closeAll } from './fd-helpers.ts';

const addon = native();
// Loosely typed view, to pass what TypeScript would refuse.
const loose = addon as unknown as Record<string, (...args: unknown[]) => unknown>;

const typeError = (e: NodeJS.ErrnoException) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE';
const rangeError = (e: NodeJS.ErrnoException) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE';

test('fds must be integers in [0, 2^31)', () => {
  for (const bad of ['3', null, undefined, {}, 3n]) {
    assert.throws(() => loose.peerCredentials(bad), typeError, String(bad));
  }
  for (const bad of [-1, 1.5, NaN, Infinity, 2 ** 31]) {
    assert.throws(() => loose.peerCredentials(bad), rangeError, String(bad));
  }
  assert.throws(() => loose.recvmsg(), typeError);
});

test('recvmsg: buffer must be a Uint8Array; offset, length and maxFds within range', () => {
  const [a, b] = addon.socketpair();
  const buffer = Buffer.alloc(8);
  try {
    assert.throws(() => loose.recvmsg(a, 'text', 0, 4, 0), typeError);
    assert.throws(() => loose.recvmsg(a, new Float64Array(2), 0, 1, 0), typeError);
    assert.throws(() => loose.recvmsg(a, new ArrayBuffer(8), 0, 1, 0), typeError);
    assert.throws(() => addon.recvmsg(a, buffer, 9, 0, 0), rangeError);
    assert.throws(() => addon.recvmsg(a, buffer, 4, 5, 0), rangeError);
    assert.throws(() => addon.recvmsg(a, buffer, -1, 1, 0), rangeError);
    assert.throws(() => addon.recvmsg(a, buffer, 0.5, 1, 0), rangeError);
    assert.throws(() => addon.recvmsg(a, buffer, 0, 0, 0), rangeError);
    assert.throws(() => addon.recvmsg(a, buffer, 0, 8, 254), rangeError);
    assert.throws(() => loose.recvmsg(a, buffer, '0', 8, 0), typeError);
    // The window may end exactly at the buffer's end.
    assert.is(addon.recvmsg(a, buffer, 4, 4, 0), null);
  } finally {
    closeAll([a, b]);
  }
});

test('sendmsg: fds must be an array of fds; none may ride on zero bytes', () => {
  const [a, b] = addon.socketpair();
  const buffer = Buffer.from('abcd');
  try {
    assert.throws(() => loose.sendmsg(a, buffer, 0, 4, 5), typeError);
    assert.throws(() => loose.sendmsg(a, buffer, 0, 4, ['5']), typeError);
    assert.throws(() => addon.sendmsg(a, buffer, 0, 4, [-1]), rangeError);
    assert.throws(() => addon.sendmsg(a, buffer, 0, 4, [1.5]), rangeError);
    assert.throws(() => addon.sendmsg(a, buffer, 0, 4, new Array(254).fill(0)), rangeError);
    assert.throws(() => addon.sendmsg(a, buffer, 0, 0, [0]), rangeError);
    assert.throws(() => addon.sendmsg(a, buffer, 2, 3), rangeError);
    assert.is(addon.sendmsg(a, buffer, 4, 0), 0);
    assert.is(addon.sendmsg(a, buffer, 0, 4, null as unknown as number[]), 4);
    assert.is(addon.sendmsg(a, buffer, 0, 4, []), 4);
  } finally {
    closeAll([a, b]);
  }
});

test('paths and strings: type, NUL bytes; numbers: backlog, pid, signal', () => {
  assert.throws(() => loose.listenUnix(42, 1), typeError);
  assert.throws(() => addon.listenUnix('a\0b', 1), TypeError);
  assert.throws(() => addon.listenUnix('unused-path', -1), rangeError);
  assert.throws(() => loose.connectUnix(undefined), typeError);
  assert.throws(() => addon.sdNotify('@name', 'READY=1\0'), TypeError);
  assert.throws(() => loose.sdNotify('@name', 1), typeError);
  assert.throws(() => addon.pidfdOpen(0), rangeError);
  assert.throws(() => addon.pidfdSendSignal(0, 65), rangeError);
  assert.throws(() => loose.setNonBlocking(0, 'yes'), typeError);
  assert.throws(() => loose.shutdown(0, 1), typeError);
});

test('watch: interest must be an object of booleans, callback a function', () => {
  const [a, b] = addon.socketpair();
  try {
    assert.throws(() => loose.watch(a, null, () => {}), typeError);
    assert.throws(() => loose.watch(a, { readable: 1 }, () => {}), typeError);
    assert.throws(() => loose.watch(a, {}, 'callback'), typeError);
    const throwingGetter = {
      get readable(): boolean {
        throw new Error('getter');
      },
    };
    assert.throws(() => addon.watch(a, throwingGetter, () => {}), /getter/);
    const watcher = addon.watch(a, {}, () => {});
    try {
      assert.throws(() => (watcher as unknown as { update: (x: unknown) => void }).update(undefined), typeError);
      assert.throws(() => watcher.update({ hangup: 'yes' as unknown as boolean }), typeError);
    } finally {
      watcher.close();
    }
  } finally {
    closeAll([a, b]);
  }
});

test.run();
