// Shared assertions for the systemd suites: errors compared by code, never by message.
import * as assert from 'uvu/assert';
import { SystemdError, type SystemdErrorCode } from '../../src/systemd/errors.ts';

/** Runs `fn`, asserting it throws a SystemdError with `code`. */
export function throwsCode(fn: () => unknown, code: SystemdErrorCode): SystemdError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof SystemdError, `expected SystemdError ${code}, got ${String(caught)}`);
  assert.is((caught as SystemdError).code, code, (caught as SystemdError).message);
  return caught as SystemdError;
}

/** Awaits `promise`, asserting it rejects with a SystemdError with `code`. */
export async function rejectsCode(promise: Promise<unknown>, code: SystemdErrorCode): Promise<SystemdError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof SystemdError, `expected SystemdError ${code}, got ${String(caught)}`);
  assert.is((caught as SystemdError).code, code, (caught as SystemdError).message);
  return caught as SystemdError;
}
