// GO with STARTED: the real session helper writes the worker's STARTED frame itself, right after its
// fork, with the two pids only it knows then (its own and the program's), before any output; a GO
// that is not such a frame ends the helper before it writes a byte.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, TERMINATE, goWith, sh, startedFrame } from './helper-harness.ts';
import { HELPER_DIALECT } from '../../src/control/helper-channel.ts';
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';

const programPid = (run: HelperRun): number => {
  const message = run.messages.find((m) => m.type === 'pid');
  return message?.type === 'pid' ? message.pid : -1;
};

test('version 2: nothing before GO; then STARTED first, with the program\'s pid and the helper\'s, the rest as sent', async () => {
  const template = startedFrame(2, 'pty-7.service', ['LISTEN_FDS', 'NOTIFY_SOCKET']);
  const run = new HelperRun(sh('echo pid=$$'), { options: ['--protocol=2'], go: false, started: template });
  await run.waitForMessage('pid');
  assert.is(run.received, 0, 'nothing reaches the client before GO');
  run.go();
  const ended = await run.ended;
  const started = run.started!;
  assert.ok(started, 'STARTED came');
  assert.is(started.readUInt32BE(5), programPid(run), 'programPid: what the helper reported');
  assert.is(started.readUInt32BE(9), run.child.pid, 'mainPid: the helper itself');
  assert.equal(started.subarray(13), template.subarray(13), 'unit and dropped names as the worker laid them out');
  assert.is(ended.output.toString('latin1').trim(), `pid=${programPid(run)}`);
  assert.is(ended.report?.reason, 'exit');
});

test('version 1: STARTED names the helper as the main process', async () => {
  const template = startedFrame(1, 'pty-7.service');
  const run = new HelperRun(sh('echo hi'), { started: template });
  const ended = await run.ended;
  assert.is(run.started!.readUInt32BE(5), run.child.pid);
  assert.equal(run.started!.subarray(9), template.subarray(9));
  assert.is(ended.output.toString('latin1'), 'hi\r\n');
});

test('a STARTED the full socket cut travels in the report: the client gets it whole after the rest', async () => {
  // 50 KiB of dropped names, a 4 KiB socket and a client that reads nothing: the helper's send stops
  // inside STARTED, output waits, and the write timeout ends the session with the rest in its report.
  const dropped = Array.from({ length: 100 }, (_, i) => `N${i}_${'x'.repeat(500)}`);
  const template = startedFrame(2, 'pty-7.service', dropped);
  const run = new HelperRun(sh('echo hi; exec sleep 100'), { options: ['--protocol=2'], go: false, started: template, writeTimeoutMs: 100, clientBuffer: 4096 });
  run.client.pauseReading();
  run.go();
  await run.waitForMessage('end');
  const end = run.messages.find((m) => m.type === 'end');
  assert.is(end?.type === 'end' && end.report.reason, 'flow');
  assert.ok(end?.type === 'end' && end.report.remainder.length > 0 && end.report.remainder.length < template.length, 'cut inside STARTED');
  run.client.resumeReading();
  // The harness appends the remainder and fails unless STARTED is whole and first.
  const ended = await run.ended;
  assert.equal(run.started!.subarray(13), template.subarray(13));
  assert.is(ended.output.length, 0, 'no output was sent past the cut');
});

test('a client that resets its connection with STARTED unread is gone, not a protocol error (a failed recvmsg has no control data)', async () => {
  // A 4 KiB socket holds part of a 50 KiB STARTED; closing with it unread resets the connection
  // (ECONNRESET at the helper's next read).
  const template = startedFrame(2, 'pty-7.service', Array.from({ length: 100 }, (_, i) => `N${i}_${'x'.repeat(500)}`));
  const run = new HelperRun(sh('echo hi; exec sleep 100'), { options: ['--protocol=2'], go: false, started: template, clientBuffer: 4096 });
  run.client.pauseReading();
  run.go();
  // STARTED's first bytes are in our unread queue: the helper is past GO and blocked inside STARTED.
  const copy = native().dupCloexec(run.client.fd); // the paused socket keeps its own watcher on its fd
  await new Promise<void>((resolve) => {
    const watcher = native().watch(copy, { readable: true }, () => {
      watcher.close();
      resolve();
    });
  });
  closeSync(copy);
  run.client.close();
  await run.waitForMessage('end');
  const end = run.messages.find((m) => m.type === 'end');
  assert.is(end?.type === 'end' && end.report.reason, 'client-gone', end?.type === 'end' ? end.report.text : 'no report');
  // Our end is closed, so `ended` (which waits for its EOF) never comes: the helper's exit does.
  if (run.child.exitCode === null && run.child.signalCode === null) await new Promise((resolve) => run.child.once('exit', resolve));
});

for (const [name, go] of [
  ['nothing (the worker always sends STARTED with it)', goWith(Buffer.alloc(0))],
  ['not a STARTED', goWith(Buffer.from('0600000001' + '61', 'hex'))],
  ['a length that is not its own', goWith(Buffer.from('0400000009' + '00000000' + '7878', 'hex'))],
  ['too short for its pids', goWith(Buffer.from('0400000003' + '000000', 'hex'))],
] as const) {
  test(`a GO carrying ${name} ends the helper before it writes a byte`, async () => {
    const run = new HelperRun(sh('echo hi; exec sleep 100'), { go: false });
    await run.waitForMessage('pid');
    run.control.write(go);
    const ended = await run.ended;
    assert.is(ended.output.length, 0);
    assert.is(run.received, 0);
    assert.is(ended.report?.reason, 'terminated', 'a worker that sends junk is treated as gone: reported, nothing written');
    assert.is(ended.report?.remainder.length, 0);
  });
}

// The worker's rule after a failed start (src/worker/session.ts #failAfterLaunch): TERMINATE queued
// behind GO, or the channel shut, before the helper read GO, means nothing reaches the client.
test('GO and TERMINATE read together: no STARTED, no output, a "terminated" report with nothing to finish', async () => {
  const run = new HelperRun(sh('echo hi; exec sleep 100'), { go: false });
  await run.waitForMessage('pid');
  run.control.write(Buffer.concat([goWith(startedFrame(1)), TERMINATE]));
  const ended = await run.ended;
  assert.is(run.received, 0);
  assert.is(run.started, undefined, 'STARTED never written');
  assert.is(ended.report?.reason, 'terminated');
  assert.is(ended.report?.remainder.length, 0);
});

test('the channel shut for reading after the fork, GO never read: nothing reaches the client, and the report still comes', async () => {
  const run = new HelperRun(sh('echo hi; exec sleep 100'), { go: false });
  await run.waitForMessage('pid');
  run.control.shutdown('write');
  const ended = await run.ended;
  assert.is(run.received, 0);
  assert.is(run.started, undefined);
  assert.is(ended.report?.reason, 'terminated', 'the worker that shut the channel still reads the report');
});

test('the helper names its control dialect first, before PID and before it reads ENV (a failed start says it too)', async () => {
  const run = new HelperRun(sh('echo hi'));
  await run.ended;
  assert.equal(run.messages[0], { type: 'hello', dialect: HELPER_DIALECT });
  assert.is(run.messages.findIndex((m) => m.type === 'pid'), 1);
  const refused = new HelperRun(['0', '80', 'true']);
  await refused.ended;
  assert.equal(refused.messages[0], { type: 'hello', dialect: HELPER_DIALECT });
  assert.is(refused.messages.at(-1)?.type, 'end');
});

test.run();
