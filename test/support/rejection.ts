// The error a promise must reject with, checked to be of the expected class: a promise that resolves fails the test.
import * as assert from 'uvu/assert';

/** A function awaiting a promise that must reject with an instance of `type`, and returning that error. */
export function rejectionOf<E>(type: abstract new (...args: never[]) => E): (promise: Promise<unknown>) => Promise<E> {
  return async (promise) => {
    try {
      await promise;
    } catch (error) {
      assert.instance(error, type);
      return error as E;
    }
    assert.unreachable('expected a rejection');
    throw new Error('unreachable');
  };
}
