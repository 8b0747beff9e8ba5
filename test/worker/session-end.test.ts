// A session's end (session.ts, session-state.ts). It tells the broker `finishing` once its end is
// decided, just before its last frame and before its unit is gone: the broker's slot for it comes free
// soon, and a start that finds every slot held waits for it. And whichever two causes end it, in
// either order, it writes exactly one last frame, the one docs/architecture.md "When ends meet" names.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import type { WorkerMessage } from '../../src/control/broker-worker.ts';
import { HelperMessageType } from '../../src/control/helper-channel.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, encodeFrame, type Frame } from '../../src/protocol/index.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import type { Units } from '../../src/systemd/bus-session.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import type { ExitStatus } from '../../src/systemd/unit-watch.ts';
import { RawClient } from '../support/frame-client.ts';
import { helperStarts, scriptedStart, runSession, type SessionOptions } from './session-fixture.ts';
import { deferred } from '../support/deferred.ts';

/** Not this process: the program's pid must differ from the unit's MainPID. */
const PROGRAM_PID = 2;

/** A session whose start job, unit end and unit stops the test settles; its reports recorded. */
function session(stopAndWait: Units['stopAndWait'], options: SessionOptions = {}) {
  const unitEnd = deferred<ExitStatus>();
  const { manager, job, asked } = scriptedStart({
    waitForExit: () => unitEnd.promise,
    stopAndWait,
  });
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
  return { client: new RawClient(clientFd, 1, { autoCredit: false }), clientFd, ended, job, asked: asked.promise, reports, beforeLastFrame: () => beforeLastFrame, cleanUp };
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

test('START cut short, then a half-close: ERROR PROTOCOL to the peer that can still read it (docs/protocol.md), no unit asked for', async () => {
  for (const cut of [0, 1, 4, 5, 12]) {
    const { client, ended, reports, cleanUp, clientFd } = session(async () => undefined, { start: false });
    const start = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 1n, argv: ['/bin/true'], env: [] });
    if (cut > 0) assert.is(native().sendmsg(clientFd, start, 0, cut, []), cut);
    native().shutdown(clientFd, 'write');
    assert.is(await ended, 'error', `cut at ${cut}`);
    await client.frame('error');
    assert.is(client.first('error')!.code, ErrorCode.PROTOCOL, `cut at ${cut}`);
    assert.equal(reports, ['finishing'], `cut at ${cut}: no unit asked for`);
    client.close();
    cleanUp();
  }
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

test('version 2, a program that ends before its start is confirmed: EXIT\'s end record still runs from the pid to the unit\'s end (never negative, so never unmeasured)', async () => {
  const unitEnd = deferred<ExitStatus>();
  const watching = deferred<void>();
  const { manager, job, asked } = scriptedStart({
    waitForExit: () => (watching.resolve(), unitEnd.promise),
  });
  const { clientFd, ended, cleanUp } = runSession(manager, { version: 2 });
  const client = new RawClient(clientFd, 2, { autoCredit: false });
  const { helperCopy, stdoutCopy, progress } = await asked.promise;
  progress.forked?.(process.pid);
  job.resolve({ mainPid: process.pid });
  await watching.promise;
  // In one turn, before the worker reads its channel: PID, STARTED, the END report, and the unit's end.
  helperStarts(helperCopy, stdoutCopy, PROGRAM_PID, process.pid, 2);
  closeSync(stdoutCopy);
  const end = endMessage('exit');
  assert.is(native().sendmsg(helperCopy, end, 0, end.length, []), end.length);
  unitEnd.resolve(EXITED);
  assert.is(await ended, 'exit');
  await client.closed();
  const exit = client.first('exit');
  assert.ok(exit, 'EXIT');
  assert.ok(exit!.accounting!.durationUsec !== null && exit!.accounting!.durationUsec >= 0, String(exit!.accounting!.durationUsec));
  client.close();
  closeSync(helperCopy);
  cleanUp();
});

// ── Every pair of end causes, in both orders ──────────────────────────────────────────────────────

/** The causes the worker meets: the program's exit (the helper's END report), the client's hang-up,
 * STOP, the helper's write timeout (its `flow` report), the helper's channel broken, the unit failing
 * (its helper killed: no report), and the broker's shutdown. */
const CAUSES = ['exit', 'hang-up', 'stop', 'write-timeout', 'channel-loss', 'unit-failure', 'shutdown'] as const;
type Cause = (typeof CAUSES)[number];

const EXITED = { code: 1, status: 3, result: 'exit-code' };
const KILLED = { code: 2, status: 9, result: 'signal' };
const HUNG_UP = { code: 2, status: 1, result: 'success' };

/** A helper → worker message as control.c lays it out: type, u32 length, payload. */
function helperMessage(type: number, payload = Buffer.alloc(0)): Buffer {
  const header = Buffer.from([type, 0, 0, 0, 0]);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** An END report (control.c control_send_end): reason, code, bytes in and out, no remainder. */
function endMessage(reason: 'exit' | 'stop' | 'client-gone' | 'flow' | 'terminated'): Buffer {
  const payload = Buffer.alloc(23);
  payload[0] = { exit: 1, stop: 2, 'client-gone': 3, flow: 4, terminated: 6 }[reason];
  return helperMessage(HelperMessageType.END, payload);
}

/** The last frame docs/architecture.md "When ends meet" documents for these causes, in this order. */
function documented(order: readonly Cause[]): Frame | undefined {
  // A client that is gone is sent nothing.
  if (order.includes('hang-up')) return undefined;
  // The helper's report, if it made one before it died or broke its channel (then: none, as a frame
  // of ours could land inside a half-written one of its).
  let report: 'exit' | 'stop' | 'flow' | 'terminated' | undefined;
  for (const cause of order) {
    if (cause === 'unit-failure' || cause === 'channel-loss') break;
    if (cause === 'exit' || cause === 'stop') report = cause;
    if (cause === 'write-timeout') report = 'flow';
    if (report) break;
  }
  if (!report && !order.includes('unit-failure') && !order.includes('channel-loss') && order.includes('shutdown')) report = 'terminated';
  if (!report) return undefined;
  // The worker's own end wins over the helper's report.
  if (order.includes('shutdown')) return { type: 'error', code: ErrorCode.SHUTDOWN, message: 'supervisor is shutting down' };
  if (report === 'exit') return { type: 'exit', ...(order.includes('unit-failure') ? KILLED : EXITED) };
  if (report === 'stop') return { type: 'stopped' };
  return { type: 'error', code: ErrorCode.FLOW, message: 'client did not read its output within the write timeout' };
}

/** A started session whose helper (the test's hand), client and unit act as `order` says, then end. */
async function raceRun(order: readonly Cause[]): Promise<{ after: Frame[]; reason: string }> {
  const unitEnd = deferred<ExitStatus>();
  const unitGone = deferred<void>();
  const { manager, job, asked } = scriptedStart({
    waitForExit: () => unitEnd.promise,
    // A stop (ours, or the collection at the end) is over when the unit is gone.
    stopAndWait: () => unitGone.promise,
  });
  const taken: string[] = [];
  let wake = () => undefined as void;
  const { session, clientFd, ended, cleanUp } = runSession(manager, {
    onEvent: (event) => {
      taken.push(event.type);
      wake();
    },
  });
  let over = false;
  void ended.finally(() => ((over = true), wake()));
  /** Until the session has taken one more `type` event (or is over: then nothing more is taken). */
  const took = async (type: string, count = taken.filter((seen) => seen === type).length) => {
    while (!over && taken.filter((seen) => seen === type).length <= count) await new Promise<void>((resolve) => (wake = resolve));
  };
  const client = new RawClient(clientFd, 1, { autoCredit: false });
  const { helperCopy, stdoutCopy, progress } = await asked.promise;
  progress.forked?.(process.pid);
  helperStarts(helperCopy, stdoutCopy, PROGRAM_PID, process.pid);
  closeSync(stdoutCopy);
  job.resolve({ mainPid: process.pid });
  await client.frame('started');
  await took('started', 0);

  let helperAlive = true;
  let hungUp = false;
  let unitEnded = false;
  const report = async (reason: Parameters<typeof endMessage>[0]) => {
    if (!helperAlive) return;
    helperAlive = false;
    const before = taken.filter((seen) => seen === 'helper-end').length;
    const end = endMessage(reason);
    assert.is(native().sendmsg(helperCopy, end, 0, end.length, []), end.length);
    await took('helper-end', before);
  };
  const endUnit = (exit: ExitStatus) => {
    if (unitEnded) return;
    unitEnded = true;
    helperAlive = false;
    unitEnd.resolve(exit);
    unitGone.resolve();
  };
  const fire: Record<Cause, () => Promise<void>> = {
    exit: () => report('exit'),
    'write-timeout': () => report('flow'),
    async stop() {
      if (!helperAlive) return;
      const stop = helperMessage(HelperMessageType.STOP);
      const before = taken.filter((seen) => seen === 'helper-stop').length;
      assert.is(native().sendmsg(helperCopy, stop, 0, stop.length, []), stop.length);
      await took('helper-stop', before);
      await report('stop');
    },
    async 'channel-loss'() {
      if (!helperAlive) return;
      helperAlive = false;
      const junk = helperMessage(0x7f);
      assert.is(native().sendmsg(helperCopy, junk, 0, junk.length, []), junk.length);
      await took('helper-lost');
    },
    async 'unit-failure'() {
      if (unitEnded) return;
      endUnit(KILLED);
      await took('unit-inactive');
    },
    async shutdown() {
      session.end('shutdown', new SessionError(ErrorCode.SHUTDOWN, 'supervisor is shutting down'));
    },
    async 'hang-up'() {
      // The hang-up as the worker sees it (POLLRDHUP), with the client's reading side left open so a
      // frame written after it would be seen here.
      hungUp = true;
      native().shutdown(clientFd, 'write');
      await took('client-gone');
    },
  };
  for (const cause of order) await fire[cause]();
  // What a real helper still does: TERMINATE ends it with "terminated", a client gone with "client-gone".
  if (helperAlive) {
    const commands = Buffer.alloc(64);
    const received = native().recvmsg(helperCopy, commands, 0, commands.length, 0);
    if (received && commands[0] === HelperMessageType.TERMINATE) await report('terminated');
    else if (hungUp) await report('client-gone');
  }
  endUnit(order.includes('exit') ? EXITED : HUNG_UP);
  const reason = await ended;
  await client.closed();
  client.close();
  closeSync(helperCopy);
  cleanUp();
  return { after: client.frames.slice(1), reason };
}

for (const first of CAUSES) {
  for (const second of CAUSES) {
    if (first === second) continue;
    const order = [first, second] as const;
    const expected = documented(order);
    test(`${first}, then ${second}: ${expected ? `one last frame, ${expected.type.toUpperCase()}` : 'no last frame'}`, async () => {
      const { after } = await raceRun(order);
      assert.equal(after, expected ? [expected] : [], `${first} then ${second}`);
    });
  }
}

test.run();
