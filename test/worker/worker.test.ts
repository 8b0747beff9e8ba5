// The worker process's policy (worker.ts): whether it may serve another session after one ended.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mayServeAnother, type ReuseFacts } from '../../src/worker/worker.ts';

const clean: ReuseFacts = { clean: true, helperFailed: false, pendingCloses: 0, deferredDrains: 0, closing: false, served: 1, sessionsPerWorker: 64, offered: true };

test('a clean end, offered, within the bound: another session', () => {
  assert.ok(mayServeAnother(clean));
  assert.ok(mayServeAnother({ ...clean, served: 63 }));
});

test('each reason alone keeps the worker from another session', () => {
  const refusals: [string, Partial<ReuseFacts>][] = [
    ['its cleanup failed (the unit may be left)', { clean: false }],
    ['its helper broke the control channel', { helperFailed: true }],
    ['a peer\'s descriptor still closes on a thread', { pendingCloses: 1 }],
    ['a drain still waits for the close threads', { deferredDrains: 2 }],
    ['the broker asked it to stop, or is gone', { closing: true }],
    ['it has served its bound', { served: 64 }],
    ['the bound is one session', { sessionsPerWorker: 1 }],
    ['the broker did not offer reuse', { offered: false }],
  ];
  for (const [why, facts] of refusals) assert.not.ok(mayServeAnother({ ...clean, ...facts }), why);
});

test.run();
