// A session's start (session-start.ts). The session counts as started on the helper's PID message once
// systemd has announced the helper's fork, without waiting for the start job's end (JobRemoved comes
// only after the helper's exec: ≈2 ms of every start); the helper writes STARTED itself. A job that fails before the helper's PID still
// fails the start with the worker's ERROR, once the unit is gone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, type Frame } from '../../src/protocol/index.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import type { ExitStatus } from '../../src/systemd/unit-watch.ts';
import { RawClient } from '../support/frame-client.ts';
import { helperStarts, scriptedStart, runSession } from './session-fixture.ts';
import type { WorkerMessage } from '../../src/control/broker-worker.ts';
import { deferred } from '../support/deferred.ts';

/** Not this process: the program's pid must differ from the unit's MainPID. */
const PROGRAM_PID = 2;

/** A session whose unit manager announces the fork and then holds the job open until the test settles it. */
function startingSession(version = 1) {
  // The unit's end as its signals tell it (UnitStop.watch): held until the test settles it.
  const unitEnd = deferred<ExitStatus>();
  const { manager, job, asked } = scriptedStart({
    waitForExit: () => unitEnd.promise,
  });
  const started = deferred<WorkerMessage>();
  const { session, clientFd, ended, cleanUp } = runSession(manager, { version, report: (message) => message.type === 'started' && started.resolve(message) });
  return { session, client: new RawClient(clientFd, version, { autoCredit: false }), ended, job, unitEnd, asked: asked.promise, started: started.promise, cleanUp };
}

test('the session counts as started on the helper PID message while the start job is still running', async () => {
  const { client, ended, job, asked, started: startedReport, cleanUp } = startingSession();
  const { helperCopy, stdoutCopy, progress } = await asked;
  progress.forked?.(process.pid);
  helperStarts(helperCopy, stdoutCopy, PROGRAM_PID, process.pid);
  closeSync(stdoutCopy);
  await client.frame('started');
  // The job never ends unless the test ends it: without the early path no report would come at all.
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'none'>((resolve) => (timer = setTimeout(() => resolve('none'), 2000)));
  const came = await Promise.race([startedReport, gaveUp]);
  clearTimeout(timer);
  assert.equal(came, { type: 'started', mainPid: process.pid }, 'started while the start job still ran, with the MainPID systemd announced');
  const started = client.frames.find((frame) => frame.type === 'started') as Extract<Frame, { type: 'started' }>;
  assert.is(started.mainPid, process.pid, 'STARTED as the helper wrote it');
  job.resolve({ mainPid: process.pid });
  client.close();
  assert.is(await ended, 'client-gone');
  closeSync(helperCopy);
  cleanUp();
});

test('a start job that fails before the helper PID came still fails the start with an ERROR', async () => {
  const { client, ended, job, asked, cleanUp } = startingSession();
  const { helperCopy, progress } = await asked;
  progress.forked?.(process.pid);
  job.reject(new SystemdError('UNIT_START_FAILED', 'start job ended "failed"', { jobResult: 'failed' }));
  await client.frame('error');
  const error = client.frames.find((frame) => frame.type === 'error') as Extract<Frame, { type: 'error' }>;
  assert.is(error.code, ErrorCode.START_FAILED);
  assert.not.ok(client.frames.some((frame) => frame.type === 'started'), 'no STARTED before the ERROR');
  assert.is(await ended, 'error');
  client.close();
  closeSync(helperCopy);
  cleanUp();
});

// PID 1's order for a start that fails after the fork (status 203: no helper to exec; 217: no such
// user): the unit's signals say "failed" just before JobRemoved and "no job" right after it (job.c
// job_uninstall), which ends the unit's watch; startSession rejects only a readExit round trip (and
// its discard, a whole stopAndWait) later. The client's ERROR is still the start job's, as
// operations.md documents and as it was before the early STARTED.
test('a start job that fails after the fork: the ERROR is the job\'s, though the unit\'s end was seen first', async () => {
  const { client, ended, job, unitEnd, asked, cleanUp } = startingSession();
  const { helperCopy, progress } = await asked;
  progress.forked?.(process.pid);
  unitEnd.resolve({ code: 1, status: 217, result: 'exit-code' });
  // Whatever the unit's end sets off has run (microtasks) before JobRemoved's result is in.
  await new Promise(setImmediate);
  job.reject(new SystemdError('UNIT_START_FAILED', 'opencode-pty-session-x.service: start job ended "failed"', { jobResult: 'failed' }));
  await client.frame('error');
  const error = client.frames.find((frame) => frame.type === 'error') as Extract<Frame, { type: 'error' }>;
  assert.is(error.code, ErrorCode.START_FAILED);
  assert.is(error.message, 'session unit could not be started: opencode-pty-session-x.service: start job ended "failed"');
  assert.is(await ended, 'error');
  client.close();
  closeSync(helperCopy);
  cleanUp();
});

/** An END report (control.c control_send_end): `reason` 1 exit, 6 terminated; `remainder` the rest of a frame. */
function endReport(reason: number, remainder = Buffer.alloc(0)): Buffer {
  const payload = Buffer.alloc(23 + remainder.length);
  payload[0] = reason;
  payload.writeUInt32BE(remainder.length, 19);
  remainder.copy(payload, 23);
  const header = Buffer.from([0x43, 0, 0, 0, 0]);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

test('a job that fails after the helper named its program (a status of systemd\'s range): the session ran, and it ends with EXIT, not START_FAILED', async () => {
  const { client, ended, job, unitEnd, asked, cleanUp } = startingSession();
  const { helperCopy, stdoutCopy, progress } = await asked;
  progress.forked?.(process.pid);
  helperStarts(helperCopy, stdoutCopy, PROGRAM_PID, process.pid);
  closeSync(stdoutCopy);
  const end = endReport(1);
  assert.is(native().sendmsg(helperCopy, end, 0, end.length, []), end.length);
  // PID 1 reaped the helper before it saw the exec: the job "failed", the unit's end says how.
  job.reject(new SystemdError('UNIT_START_FAILED', 'start job ended "failed"', { jobResult: 'failed', exit: { code: 1, status: 203, result: 'exit-code' } }));
  unitEnd.resolve({ code: 1, status: 203, result: 'exit-code' });
  await client.frame('exit');
  assert.equal(client.frames.map((frame) => frame.type), ['started', 'exit']);
  assert.equal(client.first('exit'), { type: 'exit', code: 1, status: 203, result: 'exit-code' });
  assert.is(await ended, 'exit');
  client.close();
  closeSync(helperCopy);
  cleanUp();
});

test('version 2, a helper naming its own pid after it wrote STARTED and half an OUTPUT: its report\'s remainder, then ERROR INTERNAL, and nothing else of the worker\'s', async () => {
  const { client, ended, job, asked, cleanUp } = startingSession(2);
  const { helperCopy, stdoutCopy, progress } = await asked;
  // The helper's writes: STARTED (pids as it set them), then an OUTPUT frame cut after its header.
  helperStarts(helperCopy, stdoutCopy, process.pid, process.pid, 2);
  const cut = Buffer.from('0600000003', 'hex');
  assert.is(native().sendmsg(stdoutCopy, cut, 0, cut.length, []), cut.length);
  closeSync(stdoutCopy);
  const report = endReport(6, Buffer.from('hi!'));
  assert.is(native().sendmsg(helperCopy, report, 0, report.length, []), report.length);
  progress.forked?.(process.pid);
  // A failure waits for the job's own end (unlessJobFails: a failed job's error would win).
  job.resolve({ mainPid: process.pid });
  await client.frame('error');
  assert.equal(client.frames.map((frame) => frame.type), ['started', 'output', 'error']);
  assert.equal(client.first('output'), { type: 'output', data: Buffer.from('hi!') });
  assert.is(client.first('error')!.code, ErrorCode.INTERNAL);
  assert.match(client.first('error')!.message, 'which is not its program');
  assert.is(await ended, 'error');
  client.close();
  closeSync(helperCopy);
  cleanUp();
});

test('a shutdown while the start job waits (no fork yet): the helper\'s channel is shut and read away, and the client gets ERROR SHUTDOWN', async () => {
  const { session, client, ended, asked, cleanUp } = startingSession();
  const { helperCopy, stdoutCopy } = await asked;
  closeSync(stdoutCopy);
  session.end('shutdown', new SessionError(ErrorCode.SHUTDOWN, 'supervisor is shutting down'));
  await client.frame('error');
  assert.is(client.first('error')!.code, ErrorCode.SHUTDOWN);
  assert.equal(client.frames.map((frame) => frame.type), ['error']);
  // A helper that ran only now would find nothing to read: no ENV, no GO (it would end, writing nothing).
  assert.is(native().recvmsg(helperCopy, Buffer.alloc(64), 0, 64, 0)?.bytes ?? 0, 0);
  assert.is(await ended, 'shutdown');
  client.close();
  closeSync(helperCopy);
  cleanUp();
});

test.run();
