// A START's keep fields against the config (keep-plan.ts): kept or not, the limits named, never lowered.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/index.ts';
import { ErrorCode, SessionError, type FrameOf } from '../../src/protocol/index.ts';
import { keepHelperArgs, keepPlanFor } from '../../src/worker/keep-plan.ts';

const config = { session: { ...DEFAULT_SESSION, maxKeepMs: 60_000, maxRetainedBytes: 1 << 20, defaultRetainedBytes: 65536 } };
const start = (fields: Partial<FrameOf<'start'>>): FrameOf<'start'> => ({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], ...fields });

function refused(fields: Partial<FrameOf<'start'>>, names: string): void {
  try {
    keepPlanFor(start(fields), config, 3);
  } catch (error) {
    assert.instance(error, SessionError);
    assert.is((error as SessionError).wireCode, ErrorCode.BAD_START);
    assert.match((error as Error).message, names);
    return;
  }
  assert.unreachable('refused');
}

test('not kept: keepMs 0, or a version before 3', () => {
  assert.is(keepPlanFor(start({ keepMs: 0 }), config, 3), undefined);
  assert.is(keepPlanFor(start({ keepMs: 5000 }), config, 2), undefined);
});

test('kept: the ring asked for, or the default for 0; the label as given', () => {
  assert.equal(keepPlanFor(start({ keepMs: 5000, retainBytes: 8192, label: 'build' }), config, 3), { keepMs: 5000, retainBytes: 8192, label: 'build' });
  assert.equal(keepPlanFor(start({ keepMs: 60_000 }), config, 3), { keepMs: 60_000, retainBytes: 65536, label: '' });
});

test('beyond the config: BAD_START naming the limit, never lowered', () => {
  refused({ keepMs: 60_001 }, 'session.maxKeepMs (60000)');
  refused({ keepMs: 1, retainBytes: (1 << 20) + 1 }, 'session.maxRetainedBytes (1048576)');
});

test('the helper\'s arguments', () => {
  assert.equal(keepHelperArgs({ keepMs: 1, retainBytes: 8192, label: '' }, 42, 4), ['--keep', '--session-id=42', '--retain-bytes=8192', '--max-observers=4']);
});

test.run();
