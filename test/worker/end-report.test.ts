// The journal line of a session's end names its reason, code and text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import { describeEnd } from '../../src/worker/end-report.ts';

test('an exit names its status; an error its code name, text and cause', () => {
  assert.is(describeEnd({ reason: 'exit', exit: { code: 1, status: 3, result: 'exit-code' } }), 'exit (code 1 status 3 result exit-code)');
  const cause = new Error('StartTransientUnit: no reply within 10000 ms');
  const error = new SessionError(ErrorCode.START_FAILED, 'session unit could not be started', { cause });
  assert.is(describeEnd({ reason: 'error', error }), 'error (START_FAILED: session unit could not be started; cause: StartTransientUnit: no reply within 10000 ms)');
  assert.is(describeEnd({ reason: 'client-gone' }), 'client-gone');
});

test.run();
