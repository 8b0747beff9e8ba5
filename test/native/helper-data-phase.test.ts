// The session helper's data phase against its real binary: the GO token, credit both ways, control
// frames never behind INPUT, signals to the foreground group, STOP, TERMINATE, flow, the client and the worker gone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, TERMINATE, WINDOW, frame, input, resize, sh, signal, T } from './helper-harness.ts';

/** A FIFO the program writes a line to: an event the test can wait for without the client socket. */
async function withFifo<R>(body: (path: string, line: Promise<string>) => Promise<R>): Promise<R> {
  const dir = mkdtempSync(join(tmpdir(), 'helper-fifo-'));
  const path = join(dir, 'fifo');
  execFileSync('mkfifo', [path]);
  try {
    const line = new Promise<string>((resolve, reject) => {
      let text = '';
      createReadStream(path, 'utf8')
        .on('data', (chunk) => (text += chunk))
        .on('end', () => resolve(text))
        .on('error', reject);
    });
    return await body(path, line);
  } finally {
    rmSync(dir, { recursive: true });
  }
}

test('nothing reaches the client before GO; after GO everything the program wrote does', async () => {
  await withFifo(async (fifo, line) => {
    const run = new HelperRun(sh(`echo early; echo written > ${fifo}; read x; echo late`), { go: false });
    assert.is(await line, 'written\n');
    // The program's output is in the terminal; the helper holds it until GO.
    assert.is(run.received, 0);
    assert.not.ok(run.messages.some((m) => m.type === 'end'));
    run.go();
    await run.waitFor('early\r\n');
    run.send(input('\n'));
    const ended = await run.ended;
    assert.is(ended.report?.reason, 'exit');
    assert.match(ended.output.toString(), /^early\r\n\r\nlate\r\n$/);
  });
});

test('output never exceeds the credit granted, and all of it arrives as credit comes in small steps', async () => {
  const run = new HelperRun(sh('stty -opost; head -c 1000000 /dev/zero | tr "\\0" x'), { autoCredit: false });
  await run.until('the first window', () => run.received === WINDOW);
  // Grant in uneven steps; the harness fails the run on any OUTPUT beyond what was granted.
  while (run.received < 1_000_000) {
    const before = run.received;
    run.grant(12_345);
    await run.until('more output', () => run.received > before || run.received >= 1_000_000);
  }
  const ended = await run.ended;
  assert.is(ended.output.length, 1_000_000);
  assert.is(ended.report?.reason, 'exit');
});

test('withholding credit is never an error: a paused client outlasts the write timeout and then gets everything', async () => {
  const run = new HelperRun(sh('stty -opost; head -c 400000 /dev/zero | tr "\\0" y; exit 5'), { autoCredit: false, writeTimeoutMs: 50 });
  await run.until('the first window', () => run.received === WINDOW);
  // Several write timeouts pass while the client holds no credit (this wait is the test's subject).
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.not.ok(run.messages.some((m) => m.type === 'end'));
  run.grant(WINDOW);
  const ended = await run.ended;
  assert.is(ended.code, 5);
  assert.is(ended.output.length, 400_000);
  assert.is(ended.report?.reason, 'exit');
});

test('a client with credit that stops reading ends in a flow report after the write timeout', async () => {
  const run = new HelperRun(sh('stty -opost; while :; do head -c 100000 /dev/zero | tr "\\0" z; done'), { writeTimeoutMs: 100 });
  await run.until('output', () => run.received > 0);
  run.client.pauseReading();
  // Credit for far more than the socket holds: output waits with credit, the client reads nothing.
  run.grant(4 * WINDOW);
  await run.waitForMessage('end').catch(() => undefined);
  run.client.resumeReading();
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'flow');
  assert.is(ended.signal, 'SIGHUP', 'the program is hung up');
});

test('a frame the full socket cut travels in the flow report: what arrived and the remainder are whole frames', async () => {
  // The socket may also fill exactly between two frames (then there is no remainder): a few runs,
  // each whole, and at least one cut inside a frame.
  let cut = 0;
  for (let attempt = 0; attempt < 6 && cut === 0; attempt++) {
    const run = new HelperRun(sh('stty -opost; while :; do head -c 100000 /dev/zero | tr "\\0" r; done'), { writeTimeoutMs: 100, clientBuffer: 4096 });
    await run.until('output', () => run.received > 0);
    run.client.pauseReading();
    await run.waitForMessage('end');
    const end = run.messages.find((m) => m.type === 'end');
    assert.is(end?.type === 'end' && end.report.reason, 'flow');
    if (end?.type === 'end' && end.report.remainder.length > 0) cut += 1;
    run.client.resumeReading();
    // The harness appends the remainder and fails on anything but whole frames.
    const ended = await run.ended;
    assert.ok(ended.output.every((byte) => byte === 0x72));
  }
  assert.is(cut, 1, 'a frame was in progress in one of the runs');
});

test('input credit comes back only once the terminal took the bytes, in quarter-window batches', async () => {
  const run = new HelperRun(sh('stty raw -echo; echo ready; head -c 200000 >/dev/null; echo done'));
  await run.waitFor('ready');
  const chunk = Buffer.alloc(20_000, 0x61);
  for (let i = 0; i < 10; i++) run.send(input(chunk));
  await run.waitFor('done');
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'exit');
  // 200000 consumed: granted in batches of at least a quarter window, less than one batch still owed.
  assert.ok(run.granted > 200_000 - 65536 && run.granted <= 200_000, `granted ${run.granted}`);
});

test('INPUT beyond the credit granted is FLOW, judged on the header', async () => {
  const run = new HelperRun(sh('stty raw -echo; echo ready; exec sleep 100'));
  await run.waitFor('ready');
  // The program reads nothing: the helper grants nothing back.
  for (let i = 0; i < 8; i++) run.send(input(Buffer.alloc(32768, 0x62)));
  run.send(Buffer.from([T.INPUT, 0, 0, 0, 1]));
  const ended = await run.ended;
  assert.is(run.granted, 0, 'nothing the terminal did not take is granted back');
  assert.is(ended.report?.reason, 'protocol');
  assert.is(ended.report?.code, 9);
  assert.is(ended.signal, 'SIGHUP');
});

test('RESIZE and SIGNAL act while earlier INPUT still waits for a program that does not read', async () => {
  // The shell waits on a child that ignores both signals (same process group: no job control here).
  const script = 'stty raw -echo; trap "stty size; kill \$!; exit 0" WINCH; trap "echo got-usr1" USR1; (trap "" USR1 WINCH; exec sleep 100) & echo ready; while :; do wait; done';
  const run = new HelperRun(['24', '80', 'sh', '-c', script]);
  await run.waitFor('ready');
  // Far more than the terminal's input buffer: most of it waits in the helper.
  for (let i = 0; i < 6; i++) run.send(input(Buffer.alloc(30_000, 0x63)));
  run.send(signal(10));
  await run.waitFor('got-usr1');
  run.send(resize(50, 132));
  await run.waitFor('50 132');
  const ended = await run.ended;
  assert.is(ended.code, 0);
  assert.is(ended.report?.reason, 'exit');
});

test('SIGNAL reaches the foreground process group, not the helper and not background jobs', async () => {
  // Job control on: the background sleep gets its own process group, as in an interactive shell.
  // `read -t`: bash runs a trap only when its read(2) returns, and a signal landing between its check
  // for traps and that read(2) waits for the next input (it hung this test about once in 40 runs, the
  // helper having delivered the signal); the timeout bounds that wait.
  const script = 'set -m; sleep 300 & echo "bg=$!"; trap "echo got-int" INT; trap "echo got-term" TERM; trap "echo got-usr2" USR2; echo ready; while :; do if read -t 0.2 x; then echo "line:$x"; fi; done';
  const run = new HelperRun(['24', '80', 'bash', '--norc', '--noprofile', '-c', script]);
  await run.waitFor('ready');
  const bg = Number(/bg=(\d+)/.exec(run.text)?.[1]);
  try {
    for (const [number, word] of [[2, 'got-int'], [15, 'got-term'], [12, 'got-usr2']] as const) {
      run.send(signal(number));
      await run.waitFor(word);
    }
    // SIGSTOP freezes the program, not the relay: RESIZE and SIGCONT still get through.
    run.send(signal(19));
    run.send(resize(30, 90));
    run.send(signal(18));
    run.send(input('still\n'));
    await run.waitFor('line:still');
    assert.not.throws(() => process.kill(bg, 0), 'the background job was hit');
    run.send(signal(9));
    const ended = await run.ended;
    assert.is(ended.signal, 'SIGKILL');
    assert.is(ended.report?.reason, 'exit');
  } finally {
    if (bg > 0) process.kill(bg, 'SIGKILL');
  }
});

test('STOP: reported at once; later INPUT, RESIZE and SIGNAL are discarded; the last output drains; then a stop report', async () => {
  const script = "stty -echo; trap 'echo last-words; exit 0' HUP; echo ready; while read x; do echo \"line:$x\"; done";
  const run = new HelperRun(sh(script));
  await run.waitFor('ready');
  run.send(frame(T.STOP));
  await run.waitForMessage('stop');
  run.send(Buffer.concat([input('ignored\n'), resize(10, 10), signal(2), frame(T.STOP), signal(63)]));
  // The worker's part: SIGHUP to the session (SendSIGHUP).
  run.child.kill('SIGHUP');
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'stop');
  assert.match(ended.output.toString(), /last-words\r\n$/);
  assert.not.match(ended.output.toString(), 'line:ignored');
  assert.is(run.messages.filter((m) => m.type === 'stop').length, 1);
});

test('TERMINATE: a terminated report, the program hung up', async () => {
  const run = new HelperRun(sh('echo ready; exec sleep 100'));
  await run.waitFor('ready');
  run.control.write(TERMINATE);
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'terminated');
  assert.is(ended.signal, 'SIGHUP');
});

test('the client closing: a client-gone report, the program hung up', async () => {
  const run = new HelperRun(sh('echo ready; exec sleep 100'));
  await run.waitFor('ready');
  run.client.shutdown('write');
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'client-gone');
  assert.is(ended.signal, 'SIGHUP');
});

test('the worker\'s channel ended (gone, or it ended the session): a "terminated" report for a worker that still reads, the program hung up', async () => {
  const run = new HelperRun(sh('echo ready; exec sleep 100'));
  await run.waitFor('ready');
  run.control.shutdown('write');
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'terminated');
  assert.is(ended.signal, 'SIGHUP');
});

test.run();
