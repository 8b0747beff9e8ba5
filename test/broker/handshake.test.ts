// A failed handshake keeps its cause: the peer's doing is told apart from ours.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SUPPORTED_VERSIONS, chooseVersion, handshakeRefusal } from '../../src/broker/handshake.ts';
import { IoError } from '../../src/io/io-error.ts';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { SessionError } from '../../src/protocol/session-error.ts';

test('a SessionError goes to the peer as it is', () => {
  const error = new SessionError(ErrorCode.VERSION, 'unsupported protocol version');
  assert.equal(handshakeRefusal(error), { error, log: 'unsupported protocol version', internal: false });
});

test('a SessionError INTERNAL (no worker, a refused hand-off) is ours: logged each time, not in the per-peer episode', () => {
  const error = new SessionError(ErrorCode.INTERNAL, 'hand-off to worker 7 failed: sendmsg failed: ETOOMANYREFS');
  assert.equal(handshakeRefusal(error), { error, log: error.message, internal: true });
});

test('a peer that closed is PROTOCOL, logged as that', () => {
  const closed = new IoError('EOF', 'peer closed');
  const refusal = handshakeRefusal(closed);
  assert.is(refusal.error.wireCode, ErrorCode.PROTOCOL);
  assert.is(refusal.log, 'client closed during the handshake (EOF)');
  assert.is(refusal.error.cause, closed);
  assert.not.ok(refusal.internal);
});

test('every code io-error calls a peer gone is a close during the handshake, not ours', () => {
  for (const code of ['EOF', 'CLOSED', 'PEER_GONE', 'ECONNRESET', 'EPIPE']) {
    const refusal = handshakeRefusal(Object.assign(new Error(code), { code }));
    assert.is(refusal.error.wireCode, ErrorCode.PROTOCOL, code);
    assert.not.ok(refusal.internal, code);
  }
});

test('anything else is ours: INTERNAL to the peer, the cause in the journal', () => {
  const cause = Object.assign(new Error('open /proc/1/stat: too many open files'), { code: 'EMFILE' });
  const refusal = handshakeRefusal(cause);
  assert.is(refusal.error.wireCode, ErrorCode.INTERNAL);
  assert.is(refusal.error.cause, cause);
  assert.is(refusal.log, 'handshake failed: open /proc/1/stat: too many open files (EMFILE)');
  assert.ok(refusal.internal);
});

test('a peer process gone before its pidfd was taken fails authentication', () => {
  const refusal = handshakeRefusal(Object.assign(new Error('pidfd_open: no such process'), { code: 'ESRCH' }));
  assert.is(refusal.error.wireCode, ErrorCode.AUTHENTICATION);
  assert.match(refusal.log, 'peer process is gone');
  assert.is((refusal.error.cause as { code?: string }).code, 'ESRCH');
});

test('the version: the highest both speak; none in common is undefined (ERROR VERSION)', () => {
  const hello = (minVersion: number, maxVersion: number) => ({ type: 'hello' as const, minVersion, maxVersion });
  assert.is(chooseVersion(hello(1, 2), [1]), 1, 'a version 2 client is served version 1 by a version 1 server');
  assert.is(chooseVersion(hello(1, 2), [1, 2]), 2);
  assert.is(chooseVersion(hello(1, 1), [1, 2]), 1, 'a version 1 client keeps version 1');
  assert.is(chooseVersion(hello(2, 9), [1, 2]), 2);
  assert.is(chooseVersion(hello(2, 2), [1]), undefined);
  assert.is(chooseVersion(hello(3, 4), [1, 2]), undefined);
  assert.ok(SUPPORTED_VERSIONS.includes(1), 'version 1 stays served');
  assert.is(chooseVersion(hello(1, 2)), 2, 'this supervisor serves version 2');
});

test.run();
