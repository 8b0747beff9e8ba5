// The two ways a session lives apart from one worker's start and end (session.ts adopt and release,
// for kept sessions): a unit that already runs is taken over and watched, never started and never
// announced; a running session is released, its unit left running and its client left to its helper.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import type { WorkerMessage } from '../../src/control/broker-worker.ts';
import { HelperMessageType } from '../../src/control/helper-channel.ts';
import { native } from '../../src/native/binding.ts';
import { encodeFrame } from '../../src/protocol/index.ts';
import type { Units } from '../../src/systemd/bus-session.ts';
import type { ExitStatus } from '../../src/systemd/unit-watch.ts';
import { Session } from '../../src/worker/session.ts';
import { deferred } from '../support/deferred.ts';
import { RawClient } from '../support/frame-client.ts';
import { fakeUnits, helperStarts, scriptedStart, runSession, sessionConfig } from './session-fixture.ts';

const UNIT = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const EXITED = { code: 1, status: 3, result: 'exit-code' };

/** An END "exit" report with no remainder (control.c control_send_end). */
function exitReport(): Buffer {
  const message = Buffer.alloc(5 + 23);
  message[0] = HelperMessageType.END;
  message.writeUInt32BE(23, 1);
  message[5] = 1;
  return message;
}

test('adopt: the unit is watched, never started; no STARTED; its end is written as any session\'s', async () => {
  const unitEnd = deferred<ExitStatus>();
  const watched: string[] = [];
  const manager: Units = {
    ...fakeUnits(() => {
      throw new Error('an adopted unit is never started');
    }),
    waitForExit: (unit: string) => (watched.push(unit), unitEnd.promise),
  };
  const [clientFd, server] = native().socketpair();
  const [workerEnd, helperEnd] = native().socketpair();
  const reports: WorkerMessage[] = [];
  const session = new Session(server, native().pidfdOpen(process.pid), { pid: process.pid, uid: process.getuid!(), gid: process.getgid!(), cgroup: null }, 5000, {
    manager,
    config: sessionConfig,
    helperPath: '/nonexistent/opencode-pty-session',
    report: (message) => reports.push(message),
    log: () => undefined,
  });
  const client = new RawClient(clientFd, 1, { autoCredit: false });
  const ended = session.adopt(UNIT, workerEnd);
  assert.is(session.unit, UNIT);
  assert.equal(watched, [UNIT]);
  assert.is(session.phase, 'running');
  const report = exitReport();
  assert.is(native().sendmsg(helperEnd, report, 0, report.length, []), report.length);
  unitEnd.resolve(EXITED);
  assert.is(await ended, 'exit');
  await client.closed();
  assert.equal(client.frames, [{ type: 'exit', ...EXITED }], 'the last frame only: the adopted session was announced long ago');
  assert.equal(
    reports.map((message) => message.type),
    ['finishing'],
  );
  client.close();
  closeSync(helperEnd);
});

test('release: no stop, no last frame; the client stays the helper\'s and the helper sees our side close', async () => {
  const stops: string[] = [];
  const kills: string[] = [];
  const { manager, job, asked } = scriptedStart({
    stopAndWait: async (unit: string) => void stops.push(unit),
    kill: async (_unit, signal) => void kills.push(String(signal)),
  });
  const reports: WorkerMessage['type'][] = [];
  const running = deferred<void>();
  const { session, clientFd, ended, cleanUp } = runSession(manager, {
    report: (message) => reports.push(message.type),
    onEvent: (_event, phase) => phase === 'running' && running.resolve(),
  });
  const client = new RawClient(clientFd, 1, { autoCredit: false });
  const { helperCopy, stdoutCopy, progress } = await asked.promise;
  progress.forked?.(process.pid);
  helperStarts(helperCopy, stdoutCopy, 2, process.pid);
  job.resolve({ mainPid: process.pid });
  await client.frame('started');
  await running.promise;
  session.release();
  assert.is(await ended, 'released');
  assert.equal(stops, [], 'the unit is left running');
  assert.equal(kills, []);
  assert.equal(reports, ['unit', 'started'], 'no finishing: the session has not ended');
  // The helper (its copy of the client as its stdout) still reaches the client.
  const output = encodeFrame({ type: 'output', data: Buffer.from('still here') });
  assert.is(native().sendmsg(stdoutCopy, output, 0, output.length, []), output.length);
  await client.frame('output');
  assert.equal(client.frames.map((frame) => frame.type), ['started', 'output']);
  // Our end of the control channel is closed: the helper reads its end.
  assert.is(native().recvmsg(helperCopy, Buffer.alloc(64), 0, 64, 0)?.bytes, 0);
  closeSync(stdoutCopy);
  closeSync(helperCopy);
  await client.closed();
  client.close();
  cleanUp();
});

test.run();
