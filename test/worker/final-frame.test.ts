// The worker's last write (final-frame.ts): which frame, decided from the helper's report and systemd's
// view, and its bounded write. flushed(): "the kernel took it" only when it did. A send that fails
// outright (the peer has closed) empties the queue at once, and one waiting for room fails without
// any 'drain': both are not sent.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, readdirSync, readFileSync } from 'node:fs';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { endReason, failureReason, flushed, lastWrite, lastWriteAfterFailedLaunch, lastWriteFor, type SessionOutcome } from '../../src/worker/final-frame.ts';
import type { EndReport, HelperEndReason } from '../../src/control/helper-channel.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import { endRecord } from '../../src/worker/end-record.ts';

const exit = { code: 1, status: 3, result: 'exit-code' };
const report = (reason: HelperEndReason, extra: Partial<EndReport> = {}): EndReport => ({
  reason,
  code: 0,
  bytesIn: 0n,
  bytesOut: 0n,
  remainder: Buffer.alloc(0),
  text: '',
  ...extra,
});
const outcome = (o: Partial<SessionOutcome>): SessionOutcome => ({ clientGone: false, ...o });

test('exit: EXIT with systemd\'s status; stop: STOPPED', () => {
  assert.equal(lastWrite(outcome({ report: report('exit'), exit })), { remainder: undefined, frame: { type: 'exit', ...exit } });
  assert.equal(lastWrite(outcome({ report: report('stop'), exit })), { remainder: undefined, frame: { type: 'stopped' } });
});

test('no report, or the client gone: nothing at all', () => {
  assert.equal(lastWrite(outcome({ exit })), {});
  assert.equal(lastWrite(outcome({ report: report('client-gone'), exit })), {});
  assert.equal(lastWrite(outcome({ clientGone: true, report: report('exit'), exit })), {});
  assert.equal(lastWrite(outcome({ clientGone: true, workerError: new SessionError(11, 'bye'), report: report('terminated') })), {});
});

test('flow, protocol, internal: ERROR with the code, after the remainder of the frame in progress', () => {
  const remainder = Buffer.from('abc');
  const flow = lastWrite(outcome({ report: report('flow', { remainder }) }));
  assert.is(flow.remainder, remainder);
  assert.is(flow.frame?.type === 'error' && flow.frame.code, 9);
  const protocol = lastWrite(outcome({ report: report('protocol', { code: 1, text: 'unknown frame type 0xee' }) }));
  assert.equal(protocol.frame, { type: 'error', code: 1, message: 'unknown frame type 0xee' });
  const internal = lastWrite(outcome({ report: report('internal', { text: 'poll failed' }) }));
  assert.equal(internal.frame, { type: 'error', code: 10, message: 'session helper failed: poll failed' });
});

test('the worker\'s own end wins over the report, but never over a missing one', () => {
  const shutdown = new SessionError(11, 'supervisor is shutting down');
  assert.equal(lastWrite(outcome({ workerError: shutdown, report: report('terminated') })).frame, { type: 'error', code: 11, message: 'supervisor is shutting down' });
  assert.equal(lastWrite(outcome({ workerError: shutdown, report: report('exit'), exit })).frame, { type: 'error', code: 11, message: 'supervisor is shutting down' });
  assert.equal(lastWrite(outcome({ workerError: shutdown })), {});
});

test('an exit report without systemd\'s status is INTERNAL, never an invented EXIT', () => {
  assert.is(lastWrite(outcome({ report: report('exit') })).frame?.type, 'error');
});

test('version 2: EXIT with the end record; STOPPED with how the program ended, or code 0 when systemd recorded none', () => {
  const accounting = endRecord({ CPU_USAGE_NSEC: 12_500_000n, MEMORY_CURRENT_BYTES: 4096n }, report('exit', { bytesIn: 6n, bytesOut: 120n }), 1_500_000n);
  assert.equal(accounting, { cpuUsageNsec: 12_500_000, memoryBytes: 4096, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: 6, outputBytes: 120, durationUsec: 1_500_000 });
  assert.equal(lastWrite(outcome({ version: 2, accounting, report: report('exit'), exit })).frame, { type: 'exit', ...exit, accounting });
  const killed = { code: 2, status: 1, result: 'success' };
  assert.equal(lastWrite(outcome({ version: 2, accounting, report: report('stop'), exit: killed })).frame, { type: 'stopped', end: { ...killed, accounting } });
  assert.equal(lastWrite(outcome({ version: 2, accounting, report: report('stop') })).frame, { type: 'stopped', end: { code: 0, status: 0, result: 'stopped', accounting } });
  // Version 1 keeps its frames.
  assert.equal(lastWrite(outcome({ version: 1, accounting, report: report('stop'), exit: killed })).frame, { type: 'stopped' });
});

test('the end record: MemoryPeak before MemoryCurrent; past 2^53 or unmeasured is unavailable, never 0', () => {
  const record = endRecord({ MEMORY_PEAK_BYTES: 10n, MEMORY_CURRENT_BYTES: 5n, TASKS_CURRENT: 2n ** 60n }, undefined, undefined);
  assert.is(record.memoryBytes, 10);
  assert.is(record.tasks, null);
  assert.is(record.inputBytes, null);
  assert.is(record.durationUsec, null);
});

test('after a failed launch: no PID, the failure as an ERROR (none to a gone client); a PID, what the report allows', () => {
  const failure = new SessionError(8, 'session unit could not be started');
  assert.equal(lastWriteAfterFailedLaunch(outcome({ workerError: failure }), failure, false), { frame: { type: 'error', code: 8, message: 'session unit could not be started' } });
  assert.equal(lastWriteAfterFailedLaunch(outcome({ workerError: failure, clientGone: true }), failure, false), {});
  // The helper named its program and died without a report: nothing may be written.
  assert.equal(lastWriteAfterFailedLaunch(outcome({ workerError: failure }), failure, true), {});
  const rest = Buffer.from('hi!');
  const reported = lastWriteAfterFailedLaunch(outcome({ workerError: failure, report: report('terminated', { remainder: rest }) }), failure, true);
  assert.equal(reported, { remainder: rest, frame: { type: 'error', code: 8, message: 'session unit could not be started' } });
});

test('the end\'s reason: the client\'s going first, then a shutdown or error of ours, then the helper\'s report', () => {
  const shutdown = new SessionError(11, 'supervisor shutting down');
  const internal = new SessionError(10, 'watch lost');
  assert.is(endReason(outcome({ report: report('exit'), exit })), 'exit');
  assert.is(endReason(outcome({ report: report('stop'), exit })), 'stop');
  assert.is(endReason(outcome({ report: report('client-gone') })), 'client-gone');
  assert.is(endReason(outcome({ clientGone: true, workerError: shutdown, report: report('exit') })), 'client-gone');
  assert.is(endReason(outcome({ workerError: shutdown, report: report('terminated') })), 'shutdown');
  assert.is(endReason(outcome({ workerError: internal, report: report('exit') })), 'error');
  assert.is(endReason(outcome({ report: report('flow') })), 'error');
  assert.is(endReason(outcome({})), 'error', 'no report: the helper died');
  assert.is(failureReason(outcome({ workerError: shutdown, clientGone: true })), 'shutdown');
  assert.is(failureReason(outcome({ clientGone: true })), 'client-gone');
  assert.is(failureReason(outcome({ workerError: internal })), 'error');
});

test('by where the end was decided: the handshake\'s ERROR (none to a gone client), a failed launch\'s rule, or the report\'s', () => {
  const timeout = new SessionError(7, 'handshake timeout: no START within the deadline');
  assert.equal(lastWriteFor({ ...outcome({}), endedIn: 'handshake', failure: timeout }, false), { frame: { type: 'error', code: 7, message: 'handshake timeout: no START within the deadline' }, reason: 'error' });
  assert.equal(lastWriteFor({ ...outcome({ clientGone: true }), endedIn: 'handshake', failure: timeout }, false), { reason: 'client-gone' });
  const failed = new SessionError(8, 'session unit could not be started');
  assert.equal(lastWriteFor({ ...outcome({ workerError: failed }), endedIn: 'starting', failure: failed }, false), { frame: { type: 'error', code: 8, message: 'session unit could not be started' }, reason: 'error' });
  assert.equal(lastWriteFor({ ...outcome({ workerError: failed }), endedIn: 'starting', failure: failed }, true), { reason: 'error' });
  assert.equal(lastWriteFor({ ...outcome({ report: report('exit'), exit }), endedIn: 'running' }, true), { remainder: undefined, frame: { type: 'exit', ...exit }, reason: 'exit' });
});

test('one writer of the last frame: the worker calls writeFinalFrame in one place, Session#finish', () => {
  const dir = new URL('../../src/worker/', import.meta.url);
  const calls = readdirSync(dir)
    .filter((name) => name.endsWith('.ts'))
    .flatMap((name) => [...readFileSync(new URL(name, dir), 'utf8').matchAll(/(?<!function )writeFinalFrame\(/g)].map(() => name));
  assert.equal(calls, ['session.ts']);
  const session = readFileSync(new URL('session.ts', dir), 'utf8');
  const finish = session.slice(session.indexOf('async #finish('));
  assert.ok(finish.slice(0, finish.indexOf('\n  }\n')).includes('writeFinalFrame('), 'inside #finish');
});

test('a write to a peer that has closed is not flushed', async () => {
  const [ours, theirs] = native().socketpair();
  closeSync(theirs);
  const socket = new FdSocket(ours);
  socket.on('error', () => undefined);
  socket.write(Buffer.from('STARTED'));
  assert.is(await flushed(socket, 5000), false);
  socket.close();
});

test('a queue waiting for room whose peer then closes is not flushed, and says so before the deadline', async () => {
  const [ours, theirs] = native().socketpair();
  const socket = new FdSocket(ours);
  socket.on('error', () => undefined);
  // More than the socket buffers hold: the rest waits in our queue for room that never comes.
  socket.write(Buffer.alloc(4 * 1024 * 1024));
  assert.ok(socket.writableLength > 0, 'part of it waits');
  const result = flushed(socket, 60_000);
  closeSync(theirs);
  const started = Date.now();
  assert.is(await result, false);
  assert.ok(Date.now() - started < 30_000, 'not the deadline');
  socket.close();
});

test.run();
