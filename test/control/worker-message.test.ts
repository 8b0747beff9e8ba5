// What the broker takes from a worker: messages of the right shape, and session messages only while
// a session is handed to it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { workerMessageFault } from '../../src/control/worker-message.ts';

test('well-formed messages in their phase pass', () => {
  assert.is(workerMessageFault({ type: 'ready' }, false), undefined);
  for (const message of [{ type: 'unit', name: 'u.service' }, { type: 'started', mainPid: 7 }, { type: 'finishing' }, { type: 'ended', reason: 'exit', reusable: true }, { type: 'ended', reason: 'error' }]) {
    assert.is(workerMessageFault(message, true), undefined, JSON.stringify(message));
  }
});

test('a session message with no session handed, and ready during one, are faults', () => {
  for (const message of [{ type: 'unit', name: 'u.service' }, { type: 'started', mainPid: 7 }, { type: 'finishing' }, { type: 'ended', reason: 'exit' }]) {
    assert.ok(workerMessageFault(message, false), JSON.stringify(message));
  }
  assert.ok(workerMessageFault({ type: 'ready' }, true));
});

test('a warm unit may be named or retired in a session or out of one', () => {
  for (const inSession of [false, true]) {
    assert.is(workerMessageFault({ type: 'warm', name: 'u.service' }, inSession), undefined);
    assert.is(workerMessageFault({ type: 'warm', name: 'u.service', retired: true }, inSession), undefined);
    assert.ok(workerMessageFault({ type: 'warm' }, inSession));
    assert.ok(workerMessageFault({ type: 'warm', name: 'u.service', retired: 'yes' }, inSession));
  }
});

test('wrong shapes are faults, never thrown', () => {
  for (const message of [null, 1, 'ready', [], {}, { type: 3 }, { type: 'nope' }, { type: 'unit' }, { type: 'started', mainPid: '7' }, { type: 'started', mainPid: 0 }, { type: 'ended' }, { type: 'ended', reason: 'x', reusable: 'yes' }]) {
    assert.ok(workerMessageFault(message, true), JSON.stringify(message));
  }
});

const kept = { type: 'kept', sessionId: 0x123, keepMs: 60_000, label: 'build', program: 'make', cwd: '/src', startedAtMs: 1_700_000_000_000, rows: 24, cols: 80, programPid: 77, mainPid: 76, origin: 1 };

test('version 3: keep-request, kept and described pass in a session, and are faults outside one or misshapen', () => {
  for (const message of [{ type: 'keep-request' }, kept, { type: 'described', requestId: 3, entry: {} }]) {
    assert.is(workerMessageFault(message, true), undefined, JSON.stringify(message));
    assert.ok(workerMessageFault(message, false), JSON.stringify(message));
  }
  for (const message of [{ ...kept, sessionId: 0 }, { ...kept, sessionId: 1.5 }, { ...kept, rows: 70000 }, { ...kept, label: 3 }, { ...kept, keepMs: -1 }, { ...kept, origin: 0 }, { ...kept, origin: undefined }, { type: 'described', entry: {} }, { type: 'described', requestId: 1, entry: [] }]) {
    assert.ok(workerMessageFault(message, true), JSON.stringify(message));
  }
});

test("'kept-ended' carries its record (checked whole by the broker: kept-store checkEnded) and only in a session", () => {
  assert.is(workerMessageFault({ type: 'kept-ended', ended: {} }, true), undefined);
  assert.ok(workerMessageFault({ type: 'kept-ended', ended: {} }, false));
  for (const ended of [undefined, null, 1, 'x', []]) assert.ok(workerMessageFault({ type: 'kept-ended', ended }, true), JSON.stringify(ended));
});

test.run();
