// --env-from-control: the program's environment is the control channel's first message (ENV), handed to
// execve only; the helper's own environment never holds it. Malformed or oversized ENV fails the start
// with a report, before any program runs.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeEnv, HelperLimits } from '../../src/control/helper-channel.ts';
import { HelperRun, lines, sh } from './helper-harness.ts';

const OPTIONS = ['--env-from-control'];

function envFrame(payload: Buffer): Buffer {
  const header = Buffer.from([0x04, 0, 0, 0, 0]);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

test('helper: the ENV entries reach the program, over the helper\'s own, and never the helper', async () => {
  const run = new HelperRun(sh('env; echo done; exec sleep 100'), { options: OPTIONS, go: false });
  run.control.write(envFrame(Buffer.from('OCPTY_ONLY_PROGRAM=a b=c\0HOME=/from-env\0TERM=vt100\0')));
  run.go();
  await run.waitFor('done\r\n');
  const env = lines(run.text);
  assert.ok(env.includes('OCPTY_ONLY_PROGRAM=a b=c'), run.text);
  assert.ok(env.includes('HOME=/from-env'), 'ENV wins over the helper\'s own');
  assert.ok(env.includes('TERM=vt100'));
  assert.is(env.filter((line) => line.startsWith('HOME=')).length, 1);
  assert.ok(env.some((line) => line.startsWith('PATH=')), 'the helper\'s own entries stay');
  const own = readFileSync(`/proc/${run.child.pid}/environ`, 'latin1').split('\0');
  assert.not.ok(own.some((entry) => entry.startsWith('OCPTY_ONLY_PROGRAM=')), 'the helper itself never holds it');
  run.child.kill('SIGHUP');
  await run.ended;
});

test('helper: an empty ENV gives the program the helper\'s own environment', async () => {
  const run = new HelperRun(sh('echo "path=$PATH"'), { options: OPTIONS, go: false });
  run.control.write(envFrame(Buffer.alloc(0)));
  run.go();
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'exit');
  assert.match(ended.output.toString(), `path=${process.env.PATH}`);
});

const MALFORMED: [string, Buffer][] = [
  ['a length above 64 KiB', Buffer.from([0x04, 0, 1, 0, 1])],
  ['an entry without a NUL at the end', envFrame(Buffer.from('A=1\0B=2'))],
  ['an entry without "="', envFrame(Buffer.from('A=1\0NOVALUE\0'))],
  ['an entry with an empty name', envFrame(Buffer.from('=x\0'))],
  ['an empty entry', envFrame(Buffer.from('A=1\0\0'))],
  ['more entries than allowed', envFrame(Buffer.from(Array.from({ length: HelperLimits.MAX_ENV_ENTRIES + 1 }, (_, k) => `V${k}=1\0`).join('')))],
  ['GO instead of ENV', Buffer.from([0x01, 0, 0, 0, 0])],
];

for (const [name, message] of MALFORMED) {
  test(`helper: ENV with ${name} fails the start with a report, no program runs`, async () => {
    const run = new HelperRun(sh('echo ran'), { options: OPTIONS, go: false });
    run.control.write(message);
    const ended = await run.ended;
    assert.is(ended.code, 1);
    assert.is(ended.report?.reason, 'internal');
    assert.match(ended.report!.text, "the program's environment: ");
    assert.not.ok(run.messages.some((m) => m.type === 'pid'), 'nothing was forked');
    assert.not.match(ended.output.toString(), 'ran');
  });
}

test('helper: the worker gone before ENV fails the start with a report', async () => {
  const run = new HelperRun(sh('echo ran'), { options: OPTIONS, go: false });
  run.control.shutdown('write');
  const ended = await run.ended;
  assert.is(ended.code, 1);
  assert.match(ended.report?.text ?? '', 'before the environment came');
});

test('encodeEnv refuses what execve cannot carry and what the helper would refuse', () => {
  const env = (entries: Record<string, string>) => new Map(Object.entries(entries));
  assert.throws(() => encodeEnv(env({ 'A=B': 'x' })), /cannot be passed/);
  assert.throws(() => encodeEnv(env({ A: 'x\0y' })), /cannot be passed/);
  assert.throws(() => encodeEnv(env({ A: 'x'.repeat(HelperLimits.MAX_ENV_PAYLOAD) })), /exceeds/);
  const many = new Map(Array.from({ length: HelperLimits.MAX_ENV_ENTRIES + 1 }, (_, k) => [`V${k}`, '1']));
  assert.throws(() => encodeEnv(many), /exceed/);
  assert.equal(encodeEnv(env({ A: '1' })), Buffer.from('0400000004' + '413d3100', 'hex'));
});

test.run();
