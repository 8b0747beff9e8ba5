// A session tells the broker `finishing` once its end is decided, just before its last frame and
// before its unit is gone: the broker's slot for it comes free soon, and a start that finds every slot
// held waits for it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import type { WorkerMessage } from '../../src/control/broker-worker.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode } from '../../src/protocol/index.ts';
import type { Units } from '../../src/systemd/bus-session.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import type { StartProgress, StartedSession } from '../../src/systemd/unit-manager.ts';
import type { SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import type { ExitStatus } from '../../src/systemd/unit-watch.ts';
import { FrameClient } from '../frame-client.ts';
import { fakeUnits, helperStarts, runSession, type SessionOptions } from './session-fixture.ts';
import { deferred } from '../deferred.ts';

/** Not this process: the program's pid must differ from the unit's MainPID. */
const PROGRAM_PID = 2;

/** A session whose start job, unit end and unit stops the test settles; its reports recorded. */
function session(stopAndWait: Units['stopAndWait'], options: SessionOptions = {}) {
  const job = deferred<StartedSession>();
  const unitEnd = deferred<ExitStatus>();
  const asked = deferred<{ helperCopy: number; stdoutCopy: number; progress: StartProgress }>();
  const manager: Units = {
    ...fakeUnits((_name: string, spec: SessionUnitSpec, progress: StartProgress = {}) => {
      // PID 1's copy of the helper's end (its stderr): what the helper writes on.
      asked.resolve({ helperCopy: native().dupCloexec(spec.stderrFd!), stdoutCopy: native().dupCloexec(spec.stdoutFd), progress });
      return job.promise;
    }),
    waitForExit: () => unitEnd.promise,
    stopAndWait,
  };
  const reports: WorkerMessage['type'][] = [];
  /** Whether the client's socket held nothing yet when `finishing` was reported. */
  let beforeLastFrame: boolean | undefined;
  let clientEnd = -1;
  const report = (message: WorkerMessage) => {
    reports.push(message.type);
    // The client acts on its last frame while the worker may not run again for a while, so `finishing`
    // must be on its way to the broker before that frame is (what is read here would be lost to the
    // client: the tests look at this before they wait for the frame).
    if (message.type !== 'finishing') return;
    try {
      beforeLastFrame = native().recvmsg(clientEnd, Buffer.alloc(64), 0, 64, 0) === null;
    } catch {
      // The client has closed its end (the session ended as the client's going): no last frame.
    }
  };
  const { clientFd, ended, cleanUp } = runSession(manager, { ...options, report });
  clientEnd = clientFd;
  return { client: new FrameClient(clientFd), ended, job, asked: asked.promise, reports, beforeLastFrame: () => beforeLastFrame, cleanUp };
}

/** Whether `promise` has settled by now (microtasks and pending I/O callbacks run). */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  return Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setImmediate(() => resolve(false)))]);
}

test('a start that fails: one `finishing` just before its ERROR, before the unit\'s stop, none after', async () => {
  const stop = deferred<void>();
  const stopping = deferred<void>();
  const { client, ended, job, asked, reports, beforeLastFrame, cleanUp } = session(() => (stopping.resolve(), stop.promise));
  const { helperCopy, progress } = await asked;
  progress.forked?.(process.pid);
  job.reject(new SystemdError('UNIT_START_FAILED', 'start job ended "failed"', { jobResult: 'failed' }));
  await stopping.promise;
  assert.equal(reports, ['unit', 'finishing'], 'told before the unit\'s stop');
  assert.is(beforeLastFrame(), true, 'told before the ERROR was written');
  // Once the unit was asked for, its helper may hold the write side: the ERROR waits for the unit's end.
  assert.not.ok(await settledNow(ended), 'the session is not over until its unit is gone');
  stop.resolve();
  await client.frame('error');
  assert.is(await ended, 'error');
  assert.equal(reports, ['unit', 'finishing']);
  client.close();
  closeSync(helperCopy);
  cleanUp();
});

test('no START within the deadline: one `finishing`, then HANDSHAKE_TIMEOUT', async () => {
  const { client, ended, reports, beforeLastFrame, cleanUp } = session(async () => undefined, { deadlineMs: 20, start: false });
  assert.is(await ended, 'error');
  assert.equal(reports, ['finishing']);
  assert.is(beforeLastFrame(), true, 'told before the ERROR was written');
  await client.frame('error');
  assert.is(client.first('error')!.code, ErrorCode.HANDSHAKE_TIMEOUT);
  client.close();
  cleanUp();
});

test('a session that ran: `finishing` once, after `started`, before the unit is collected', async () => {
  // The first stop is the hang-up's (the client closes); the second is the collection that ends the session.
  const collected = deferred<void>();
  const collecting = deferred<void>();
  let stops = 0;
  const stopAndWait = () => {
    stops += 1;
    if (stops === 1) return Promise.resolve();
    collecting.resolve();
    return collected.promise;
  };
  const { client, ended, job, asked, reports, cleanUp } = session(stopAndWait);
  const { helperCopy, stdoutCopy, progress } = await asked;
  progress.forked?.(process.pid);
  helperStarts(helperCopy, stdoutCopy, PROGRAM_PID, process.pid);
  closeSync(stdoutCopy);
  job.resolve({ mainPid: process.pid });
  await client.frame('started');
  client.close();
  await collecting.promise;
  assert.equal(reports, ['unit', 'started', 'finishing'], 'told before the unit is collected');
  assert.not.ok(await settledNow(ended), 'the unit is still being collected');
  collected.resolve();
  assert.is(await ended, 'client-gone');
  assert.equal(reports, ['unit', 'started', 'finishing']);
  closeSync(helperCopy);
  cleanUp();
});

test('a client that hangs up while its session runs: `finishing` at once, before its unit\'s stop has ended', async () => {
  const stop = deferred<void>();
  const stopping = deferred<void>();
  const { client, ended, job, asked, reports, cleanUp } = session(() => (stopping.resolve(), stop.promise));
  const { helperCopy, stdoutCopy, progress } = await asked;
  progress.forked?.(process.pid);
  helperStarts(helperCopy, stdoutCopy, PROGRAM_PID, process.pid);
  closeSync(stdoutCopy);
  job.resolve({ mainPid: process.pid });
  await client.frame('started');
  client.close();
  await stopping.promise;
  // The end is decided by the hang-up: a start waiting for a slot may count on this one already.
  assert.equal(reports, ['unit', 'started', 'finishing'], 'told while the unit is still being stopped');
  stop.resolve();
  assert.is(await ended, 'client-gone');
  assert.equal(reports, ['unit', 'started', 'finishing']);
  closeSync(helperCopy);
  cleanUp();
});

test.run();
