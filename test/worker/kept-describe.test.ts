// A kept session as LIST shows it (kept-describe.ts): root's facts first, the helper's word bounded by them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionState } from '../../src/protocol/index.ts';
import { describedEntry, endOf } from '../../src/worker/kept-describe.ts';

const facts = { sessionId: 9, keepMs: 1000, label: 'l', program: 'sh', cwd: '/', startedAtMs: 5, rows: 24, cols: 80, programPid: 3, mainPid: 2, origin: 2 as const };
const state = { oldest: 10n, next: 50n, dropped: 10n, controller: 1, observers: 7, generation: 2, programDone: false, waitStatus: 0 };
const base = { facts, finishing: false, attached: 2, deadlineAt: undefined, programEnded: undefined, state, fresh: true };

test('states: attached, detached, ended, finishing', () => {
  assert.is(describedEntry(base).state, SessionState.ATTACHED);
  assert.is(describedEntry({ ...base, attached: 0, deadlineAt: 777 }).state, SessionState.DETACHED);
  assert.is(describedEntry({ ...base, attached: 0, deadlineAt: 777 }).deadlineMs, 777);
  assert.is(describedEntry({ ...base, attached: 0, programEnded: 5 << 8 }).state, SessionState.ENDED);
  assert.is(describedEntry({ ...base, finishing: true, deadlineAt: 777 }).state, SessionState.FINISHING);
  assert.is(describedEntry({ ...base, finishing: true, deadlineAt: 777 }).deadlineMs, 0);
});

test('the helper\'s roles never exceed root\'s count; offsets as decimal text', () => {
  const entry = describedEntry(base);
  assert.equal([entry.controllers, entry.observers, entry.oldest, entry.next, entry.fresh], [1, 1, '10', '50', true]);
  const none = describedEntry({ ...base, attached: 0 });
  assert.equal([none.controllers, none.observers], [0, 0]);
  const unknown = describedEntry({ ...base, state: undefined, fresh: false });
  assert.equal([unknown.oldest, unknown.next, unknown.fresh], ['0', '0', false]);
});

test('a wait status as systemd\'s code and status', () => {
  assert.equal(endOf(undefined), { endCode: 0, endStatus: 0 });
  assert.equal(endOf(7 << 8), { endCode: 1, endStatus: 7 });
  assert.equal(endOf(9), { endCode: 2, endStatus: 9 });
  assert.equal(endOf(0x80 | 11), { endCode: 3, endStatus: 11 });
});

test.run();
