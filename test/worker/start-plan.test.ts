// A START's plan before any unit exists: the helper's arguments, the unit's spec (no environment in
// it), the ENV message with the program's environment, and BAD_START for what cannot be passed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_LIMITS, DEFAULT_SESSION } from '../../src/config/schema.ts';
import { testConfig } from '../support/config-fixture.ts';
import { ErrorCode, SessionError, type FrameOf } from '../../src/protocol/index.ts';
import { planStart } from '../../src/worker/start-plan.ts';

const config = testConfig({ client: { user: 'agent', group: 'agent', uid: 4242, gid: 4242, service: null }, requireClientUnit: false });

const start = (env: FrameOf<'start'>['env']): FrameOf<'start'> => ({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['/bin/sh', '-c', 'echo $X'], env });

test('the helper gets its options, the size and the argv; the unit gets no environment; the program gets it over ENV', () => {
  const plan = planStart(start([{ name: 'X', value: '1' }, { name: 'NOTIFY_SOCKET', value: '/s' }]), config, '/usr/lib/helper', 2);
  assert.equal(plan.spec.helperArgs, ['--env-from-control', '--protocol=2', `--write-timeout-ms=${DEFAULT_LIMITS.writeTimeoutMs}`, `--stop-timeout-sec=${DEFAULT_SESSION.stopTimeoutSec}`, '24', '80', '/bin/sh', '-c', 'echo $X']);
  assert.equal(plan.spec.environment, {});
  assert.equal([plan.spec.user, plan.spec.group, plan.spec.helperPath], ['agent', 'agent', '/usr/lib/helper']);
  assert.equal(plan.dropped, ['NOTIFY_SOCKET']);
  assert.equal(plan.envMessage.subarray(5).toString().split('\0'), ['X=1', `TERM=${DEFAULT_SESSION.term}`, '']);
});

test('an environment the ENV message cannot carry is BAD_START, before any unit', () => {
  const big = Array.from({ length: 4 }, (_, i) => ({ name: `V${i}`, value: 'x'.repeat(16_384) }));
  assert.throws(() => planStart(start(big), config, '/usr/lib/helper', 2), (error: unknown) => error instanceof SessionError && error.wireCode === ErrorCode.BAD_START);
});

test.run();
