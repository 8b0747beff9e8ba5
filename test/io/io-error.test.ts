import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fromSystemError, IoError, isPeerGone } from '../../src/io/io-error.ts';

test('isPeerGone: our own end codes and a socket errno of a gone peer', () => {
  for (const code of ['EOF', 'CLOSED', 'PEER_GONE'] as const) assert.ok(isPeerGone(new IoError(code, code)), code);
  for (const errno of ['ECONNRESET', 'EPIPE']) assert.ok(isPeerGone(Object.assign(new Error(errno), { code: errno })), errno);
});

test('isPeerGone: faults and shapeless values are not an end', () => {
  assert.not.ok(isPeerGone(new IoError('SYSCALL', 'x', { errno: 'EBADF' })));
  assert.not.ok(isPeerGone(new IoError('UNEXPECTED_FD', 'x')));
  assert.not.ok(isPeerGone(undefined));
  assert.not.ok(isPeerGone('EOF'));
  assert.not.ok(isPeerGone({ code: 5 }));
});

test('fromSystemError keeps the cause and maps a gone peer to PEER_GONE', () => {
  const cause = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', syscall: 'write' });
  const error = fromSystemError(cause, 'write');
  assert.is(error.code, 'PEER_GONE');
  assert.is(error.cause, cause);
  assert.ok(isPeerGone(error));
});

test.run();
