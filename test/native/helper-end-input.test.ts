// Protocol version 2 in the real session helper: the program's pid on the control channel before GO,
// and END_INPUT, which lets the program see end of file (docs/protocol.md "END_INPUT").
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { END_INPUT, HelperRun, input, sh } from './helper-harness.ts';

const V2 = ['--protocol=2'];
const run2 = (argv: string[]) => new HelperRun(argv, { options: V2 });
const program = (...argv: string[]) => ['24', '80', ...argv];
/** What the program printed, without the terminal's echo of the input and its line ends. */
const printed = (output: Buffer) => output.toString('latin1').replace(/\r\n/g, '\n');

test('the program\'s pid reaches the worker before GO, and it is the program ($$ of sh)', async () => {
  const run = new HelperRun(sh('echo pid=$$'), { options: V2, go: false });
  await run.waitForMessage('pid');
  const reported = run.messages.find((m) => m.type === 'pid');
  assert.is(run.received, 0, 'nothing reaches the client before GO');
  run.go();
  const ended = await run.ended;
  assert.is(printed(ended.output).trim(), `pid=${reported?.type === 'pid' ? reported.pid : '?'}`);
  assert.is.not(reported?.type === 'pid' && reported.pid, run.child.pid, 'not the helper');
});

test('version 1: the pid is reported too (the worker ignores it), END_INPUT is an unknown type', async () => {
  const run = new HelperRun(sh('echo ready; exec cat'));
  await run.waitFor('ready\r\n');
  // The control channel is another socket: its message may be read after the output.
  await run.waitForMessage('pid');
  run.send(END_INPUT);
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'protocol');
  assert.is(ended.report?.code, 1);
  assert.match(ended.report!.text, 'unknown frame type 0x0e');
});

for (const [name, data] of [
  ['lines', 'a\nb\n'],
  ['a last line without a newline', 'a\nb'],
  ['no input at all', ''],
] as const) {
  test(`cat ends at END_INPUT: ${name}`, async () => {
    const run = run2(program('cat'));
    if (data) run.send(input(data));
    run.send(END_INPUT);
    const ended = await run.ended;
    assert.is(ended.code, 0);
    assert.is(ended.report?.reason, 'exit');
    // The terminal echoes the input; cat prints it again.
    const out = printed(ended.output);
    assert.is(out.split('a').length - 1, data ? 2 : 0, out);
    assert.is(out.split('b').length - 1, data ? 2 : 0, out);
    assert.is(ended.report?.bytesIn, BigInt(data.length));
  });
}

test('sh (interactive on its terminal) runs the input and exits at its end, also after an unfinished line', async () => {
  // The output differs from the script's text, which the terminal echoes as it arrives (before or after
  // sh's first prompt): "o''ne" prints one, $((20+22)) prints 42.
  for (const script of ["echo o''ne\necho $((20+22))\n", "echo o''ne\necho $((20+22))"]) {
    const run = run2(program('sh'));
    run.send(input(script));
    run.send(END_INPUT);
    const ended = await run.ended;
    assert.is(ended.code, 0, JSON.stringify(printed(ended.output)));
    const out = printed(ended.output);
    assert.ok(out.includes('one') && out.includes('42'), JSON.stringify(out));
  }
});

test('python3 - reads its script through its line editor and exits at END_INPUT', async () => {
  const run = run2(program('python3', '-'));
  run.send(input('print(6*7)\nprint("x" * 3)\n'));
  run.send(END_INPUT);
  const ended = await run.ended;
  assert.is(ended.code, 0, JSON.stringify(printed(ended.output)));
  // Only the program prints these (the echoed script says 6*7 and "x" * 3).
  assert.ok(printed(ended.output).includes('42') && printed(ended.output).includes('xxx'), JSON.stringify(printed(ended.output)));
});

test('python3 reading stdin to its end gets an unfinished last line whole', async () => {
  const run = run2(program('python3', '-c', 'import sys; print(repr(sys.stdin.read()))'));
  run.send(input('x\ny'));
  run.send(END_INPUT);
  const ended = await run.ended;
  assert.is(ended.code, 0);
  assert.match(printed(ended.output), /'x\\ny'\n/);
});

test('a program in raw mode (no canonical input, no signals) is written nothing at END_INPUT', async () => {
  // head waits a second for one byte: a VEOF written as data would be that byte (04).
  const run = run2(sh('stty raw -echo; echo ready; timeout 1 head -c 1 | od -An -tx1; echo done'));
  await run.waitFor('ready');
  run.send(END_INPUT);
  const ended = await run.ended;
  assert.is(ended.code, 0);
  assert.not.match(printed(ended.output), /04/);
  assert.match(printed(ended.output), /done/);
});

test('INPUT after END_INPUT is a PROTOCOL error; so is a second END_INPUT', async () => {
  for (const after of [input('x'), END_INPUT]) {
    const run = run2(sh('echo ready; exec sleep 100'));
    await run.waitFor('ready\r\n');
    run.send(Buffer.concat([END_INPUT, after]));
    const ended = await run.ended;
    assert.is(ended.report?.reason, 'protocol');
    assert.is(ended.report?.code, 1);
    assert.match(ended.report!.text, after.length === 5 ? 'END_INPUT sent twice' : 'INPUT after END_INPUT');
    assert.is(ended.signal, 'SIGHUP');
  }
});

test.run();
