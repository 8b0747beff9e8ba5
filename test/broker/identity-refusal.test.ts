// A peer that could not be identified at accept: gone is the peer's doing, anything else the server's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { identityRefusal } from '../../src/broker/accept-gate.ts';
import { ErrorCode } from '../../src/protocol/index.ts';

const errno = (code: string, message: string) => Object.assign(new Error(message), { code });

test('a peer gone before accept (ESRCH) is refused AUTHENTICATION and logged as gone', () => {
  const result = identityRefusal(errno('ESRCH', 'peer PID was reused after connecting'), 'pid 7');
  assert.ok(!result.admitted);
  if (result.admitted) return;
  assert.is(result.code, ErrorCode.AUTHENTICATION);
  assert.is(result.key, 'peers gone before accept');
  assert.match(result.reason, /reused/);
});

test('any other failure is INTERNAL with its cause, never "peers gone"', () => {
  for (const error of [errno('EMFILE', 'pidfd_open: too many open files'), errno('ENOENT', 'read'), new TypeError('native(...).pidfdIdentity is not a function')]) {
    const result = identityRefusal(error, 'pid 7');
    assert.ok(!result.admitted);
    if (result.admitted) continue;
    assert.is(result.code, ErrorCode.INTERNAL);
    assert.is.not(result.key, 'peers gone before accept');
    assert.ok(result.reason.includes(error.message), result.reason);
  }
});

test.run();
