// A kept session's end (src/worker/kept-end.ts): which ends root keeps past the unit (only one the unit
// came to by itself, detached, with no last frame for anyone), and what that end says.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { endToKeep, stoppedFor, type KeptEndFacts } from '../../src/worker/kept-end.ts';
import { ErrorCode, SessionError } from '../../src/protocol/index.ts';

const TIMEOUT = { code: 2, status: 9, result: 'timeout' };
const DETACHED: KeptEndFacts = { kept: true, endedIn: 'running', exit: TIMEOUT, attached: 0, deadlineArmed: true, stopping: false, stopSession: false, workerError: undefined, helperFailed: false, report: undefined, programEnded: undefined };

test('kept: a detached session whose unit ended by itself, with no report and nobody to write to; systemd says how', () => {
  assert.equal(endToKeep(DETACHED, 0), TIMEOUT);
  assert.equal(endToKeep({ ...DETACHED, exit: { code: 2, status: 9, result: 'oom-kill' } }, 0), { code: 2, status: 9, result: 'oom-kill' });
});

test("the program's status as its helper reported it (what LIST showed), with systemd's result", () => {
  // SIGTERM (15) as a wait status; exit 4 as one.
  assert.equal(endToKeep({ ...DETACHED, programEnded: 15 }, 0), { code: 2, status: 15, result: 'timeout' });
  assert.equal(endToKeep({ ...DETACHED, programEnded: 4 << 8 }, 0), { code: 1, status: 4, result: 'timeout' });
});

test('not kept: an end of ours, a frame for someone, a connection attached, a report, a fault, no exit recorded', () => {
  const not: [string, Partial<KeptEndFacts>, number?][] = [
    ['not kept', { kept: false }],
    ['ended during its start', { endedIn: 'starting' }],
    ['no exit recorded', { exit: undefined }],
    ['a connection held for its last frame', {}, 1],
    ['attached', { attached: 1 }],
    ['its deadline passed (not armed any more)', { deadlineArmed: false }],
    ['stopping', { stopping: true }],
    ['STOP_SESSION', { stopSession: true }],
    ["the worker's own end", { workerError: new SessionError(ErrorCode.SHUTDOWN, 'shutdown') }],
    ['the helper broke its channel', { helperFailed: true }],
    ['the helper reported', { report: { reason: 'internal', text: 'x', remainder: Buffer.alloc(0) } as never }],
  ];
  for (const [why, change, recipients] of not) assert.is(endToKeep({ ...DETACHED, ...change }, recipients ?? 0), undefined, why);
});

test("STOP_SESSION's STOPPED still needs the helper's report", () => {
  assert.is(stoppedFor(false, TIMEOUT, undefined), undefined);
  assert.equal(stoppedFor(true, undefined, undefined), { type: 'stopped' });
});

test.run();
