// One look at the client service, judged for a connection: the cgroup handed on, the peer's refusal,
// or a look that could not be made, which is the supervisor's failure (INTERNAL, never AUTHENTICATION).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lookVerdict } from '../../src/broker/identity-look.ts';
import { handshakeRefusal } from '../../src/broker/handshake.ts';
import { ErrorCode } from '../../src/protocol/index.ts';
import type { ServiceSnapshot } from '../../src/identity/client-service.ts';

const state = { activeState: 'active', subState: 'running', mainPid: 7, controlGroup: '/system.slice/agent.service', invocationId: Buffer.alloc(16, 1) };
const snapshot = (over: Partial<ServiceSnapshot> = {}): ServiceSnapshot => ({ state, error: undefined, readStartTicks: 1, readAt: 0, ...over });

test('inside: the unit\'s cgroup from the look', () => {
  assert.equal(lookVerdict({ inside: true, snapshot: snapshot() }, 'agent.service'), { inside: true, cgroup: '/system.slice/agent.service' });
});

test('not inside: the peer\'s refusal, with a failed read\'s cause', () => {
  assert.equal(lookVerdict({ inside: false, snapshot: snapshot() }, 'agent.service'), { inside: false, reason: 'not inside agent.service' });
  const failedRead = lookVerdict({ inside: false, snapshot: snapshot({ state: undefined, error: new Error('bus gone') }) }, 'agent.service');
  assert.equal(failedRead, { inside: false, reason: 'not inside agent.service; its state could not be read: bus gone' });
});

test('a look that could not be made is thrown, and the handshake answers it INTERNAL', () => {
  const failure = Object.assign(new Error("open '/proc/uptime': too many open files"), { code: 'EMFILE' });
  let thrown: unknown;
  try {
    lookVerdict({ inside: false, failure }, 'agent.service');
  } catch (error) {
    thrown = error;
  }
  assert.is(thrown, failure);
  const refusal = handshakeRefusal(thrown);
  assert.is(refusal.error.wireCode, ErrorCode.INTERNAL);
  assert.ok(refusal.internal);
  assert.match(refusal.log, /too many open files \(EMFILE\)/);
});

test.run();
