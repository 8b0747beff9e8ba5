import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Admission } from '../../src/broker/admission.ts';

const limits = { maxUnauthenticated: 32, maxAdmissionsPerMinute: 120 };

test('32 ordinary slots, then refused; the 33rd goes only to the likely MainPID', () => {
  const admission = new Admission(limits);
  for (let i = 0; i < 32; i += 1) assert.equal(admission.admit(false, 1000), { admitted: true, slot: 'ordinary' });
  assert.equal(admission.admit(false, 1000), { admitted: false, reason: 'unauthenticated-limit' });
  assert.equal(admission.admit(true, 1000), { admitted: true, slot: 'reserved' });
  assert.equal(admission.admit(true, 1000), { admitted: false, reason: 'unauthenticated-limit' });
  assert.is(admission.unauthenticated, 33);
});

test('releasing an ordinary slot lets one more in', () => {
  const admission = new Admission(limits);
  for (let i = 0; i < 32; i += 1) admission.admit(false, 0);
  admission.release('ordinary');
  assert.equal(admission.admit(false, 1), { admitted: true, slot: 'ordinary' });
  assert.equal(admission.admit(false, 1), { admitted: false, reason: 'unauthenticated-limit' });
});

test('the 121st admission within a rolling minute is refused, and allowed again a minute after the first', () => {
  const admission = new Admission(limits);
  for (let i = 0; i < 120; i += 1) {
    assert.ok(admission.admit(false, i * 100).admitted);
    admission.release('ordinary');
  }
  assert.equal(admission.admit(false, 30_000), { admitted: false, reason: 'rate-limit' });
  // 60 s after the first admission (t=0) one slot of the window frees up, not two.
  assert.equal(admission.admit(false, 60_000), { admitted: true, slot: 'ordinary' });
  admission.release('ordinary');
  assert.equal(admission.admit(false, 60_000), { admitted: false, reason: 'rate-limit' });
});

test('the reserved slot is exempt from the rate', () => {
  const admission = new Admission(limits);
  for (let i = 0; i < 120; i += 1) {
    admission.admit(false, 0);
    admission.release('ordinary');
  }
  assert.equal(admission.admit(true, 1), { admitted: true, slot: 'reserved' });
  admission.release('reserved');
  assert.equal(admission.admit(true, 2), { admitted: true, slot: 'reserved' });
});

test('ordinaryAvailable says whether the MainPID question matters; pending lookups never count against the reserve', () => {
  const admission = new Admission(limits);
  assert.ok(admission.ordinaryAvailable(0));
  for (let i = 0; i < 32; i += 1) admission.admit(false, 0);
  assert.not.ok(admission.ordinaryAvailable(0));
  // However many connections are waiting to learn whether they are the MainPID, the reserve is free
  // until one of them is admitted to it (the flood bug: waiting lookups once counted against it).
  assert.ok(admission.reservedFree);
  assert.equal(admission.admit(true, 0), { admitted: true, slot: 'reserved' });
  assert.not.ok(admission.reservedFree);
  admission.release('ordinary');
  assert.ok(admission.ordinaryAvailable(0));
});

test('a used-up minute rate makes ordinary slots unavailable until the window rolls', () => {
  const admission = new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 3 });
  for (let i = 0; i < 3; i += 1) {
    admission.admit(false, 1000);
    admission.release('ordinary');
  }
  assert.not.ok(admission.ordinaryAvailable(30_000));
  assert.ok(admission.ordinaryAvailable(61_001));
});

test('a refunded admission gives its rate token back (the agent\'s own kept-session requests): 125 in a minute, then one more admitted', () => {
  const admission = new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 120 });
  for (let i = 0; i < 125; i += 1) {
    const result = admission.admit(false, 1000 + i);
    assert.equal(result, { admitted: true, slot: 'ordinary' }, `admission ${i}`);
    admission.refund('ordinary', 1000 + i);
    admission.release('ordinary');
  }
  assert.ok(admission.admit(false, 2000).admitted);
  // Only an ordinary slot's token: the reserved and root slots took none, and an unrefunded one stays.
  const full = new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 2 });
  full.admit(false, 1);
  full.admit(false, 2);
  full.refund('reserved', 0);
  full.refund('root', 0);
  assert.not.ok(full.ordinaryAvailable(3));
  full.refund('ordinary', 2);
  assert.ok(full.ordinaryAvailable(3));
  full.refund('ordinary', 3);
  full.admit(false, 4);
  assert.not.ok(full.ordinaryAvailable(5));
});

test.run();
