// A start's failures as the client's ERROR (their cause kept for the journal), and a read raced
// against the session's abort: what a losing read still yields is discarded, never kept.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { IoError } from '../../src/io/io-error.ts';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import { asSessionError, raceAbort } from '../../src/worker/start-errors.ts';
import { deferred } from '../support/deferred.ts';

test('a start\'s failure becomes the client\'s ERROR and keeps what caused it', () => {
  const gone = new IoError('EOF', 'peer closed');
  const closed = asSessionError(gone);
  assert.is(closed.wireCode, ErrorCode.PROTOCOL);
  assert.is(closed.message, 'client closed before START');
  assert.is(closed.cause, gone);
  const reset = asSessionError(Object.assign(new Error('read failed'), { code: 'ECONNRESET' }));
  assert.is(reset.wireCode, ErrorCode.PROTOCOL, 'every code that says the peer went away (io-error.ts isPeerGone)');
  const job = new SystemdError('UNIT_START_FAILED', 'start job ended "failed"', { jobResult: 'failed' });
  const failed = asSessionError(job);
  assert.is(failed.wireCode, ErrorCode.START_FAILED);
  assert.is(failed.cause, job);
  const odd = new TypeError('x is not a function');
  assert.is(asSessionError(odd).cause, odd);
  const own = new SessionError(ErrorCode.BAD_START, 'bad');
  assert.is(asSessionError(own), own, 'a SessionError is already the client\'s');
});

test('a read that completes after the abort won hands its result to discard', async () => {
  const read = deferred<{ cwdFd: number }>();
  const abort = deferred<never>();
  const discarded: number[] = [];
  const raced = raceAbort(read.promise, abort.promise, (late) => discarded.push(late.cwdFd));
  abort.reject(new Error('client gone'));
  read.resolve({ cwdFd: 42 });
  try {
    await raced;
    assert.unreachable('the abort wins');
  } catch (error) {
    assert.is((error as Error).message, 'client gone');
  }
  await read.promise;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(discarded, [42]);
});

test('a read that wins is returned and nothing is discarded', async () => {
  const read = deferred<{ cwdFd: number }>();
  const abort = deferred<never>();
  const discarded: number[] = [];
  const raced = raceAbort(read.promise, abort.promise, (late) => discarded.push(late.cwdFd));
  read.resolve({ cwdFd: 7 });
  assert.equal(await raced, { cwdFd: 7 });
  abort.reject(new Error('later'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(discarded, []);
});

test('a read that fails after losing discards nothing and raises nothing unhandled', async () => {
  const read = deferred<{ cwdFd: number }>();
  const abort = deferred<never>();
  const discarded: number[] = [];
  const raced = raceAbort(read.promise, abort.promise, (late) => discarded.push(late.cwdFd));
  abort.reject(new Error('deadline'));
  read.reject(new Error('closed'));
  await raced.catch(() => undefined);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(discarded, []);
});

test.run();
