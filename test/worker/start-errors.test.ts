// A read raced against the session's abort: what a losing read still yields is discarded, never kept.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { raceAbort } from '../../src/worker/start-errors.ts';
import { deferred } from '../deferred.ts';

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
