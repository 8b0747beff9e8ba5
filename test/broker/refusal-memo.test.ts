// The refusal memo (refusal-memo.ts): refusals remembered per PID against one read of the client
// service, forgotten at the next read, bounded, and never more than a refusal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_REMEMBERED, RefusalMemo, refusedFromMemo } from '../../src/broker/refusal-memo.ts';

const readA = { read: 'a' };
const readB = { read: 'b' };

test('a remembered peer is recalled against the same read, and forgotten once a newer read is the latest', () => {
  const memo = new RefusalMemo<object>();
  memo.remember(10, readA, { verdict: 'outside', cgroup: '/other.service' });
  assert.equal(memo.recall(10, readA), { verdict: 'outside', cgroup: '/other.service' });
  assert.is(memo.recall(11, readA), undefined);
  assert.is(memo.recall(10, readB), undefined);
  // Going back to the older read finds nothing either: it was forgotten, not set aside.
  assert.is(memo.recall(10, readA), undefined);
  assert.is(memo.size, 0);
});

test('remembering against a newer read forgets what the older one found', () => {
  const memo = new RefusalMemo<object>();
  memo.remember(10, readA, { verdict: 'outside', cgroup: '/x' });
  memo.remember(11, readB, { verdict: 'inside-not-main', cgroup: '/agent.service' });
  assert.is(memo.recall(10, readB), undefined);
  assert.equal(memo.recall(11, readB)?.verdict, 'inside-not-main');
});

test('bounded: past its size new peers are not remembered (they get the full checks), known ones are updated', () => {
  const memo = new RefusalMemo<object>(3);
  for (const pid of [1, 2, 3, 4]) memo.remember(pid, readA, { verdict: 'outside', cgroup: `/${pid}` });
  assert.is(memo.size, 3);
  assert.is(memo.recall(4, readA), undefined);
  memo.remember(2, readA, { verdict: 'inside-not-main', cgroup: '/2' });
  assert.equal(memo.recall(2, readA)?.verdict, 'inside-not-main');
  assert.ok(MAX_REMEMBERED >= 256);
});

test('an outside peer is refused whatever the admission state; an inside one only while only the reserved slot is free, and never the MainPID', () => {
  const outside = { verdict: 'outside' as const, cgroup: '/x' };
  const inside = { verdict: 'inside-not-main' as const, cgroup: '/agent.service' };
  assert.is(refusedFromMemo(outside, 10, true, 77), true);
  assert.is(refusedFromMemo(outside, 10, false, undefined), true);
  assert.is(refusedFromMemo(inside, 10, true, 77), false);
  assert.is(refusedFromMemo(inside, 10, false, 77), true);
  assert.is(refusedFromMemo(inside, 10, false, undefined), true);
  // The MainPID by the same read goes through the full checks, where its reserved slot waits.
  assert.is(refusedFromMemo(inside, 77, false, 77), false);
  assert.is(refusedFromMemo(outside, 77, false, 77), false);
  assert.is(refusedFromMemo(undefined, 10, false, 77), false);
});

test.run();
