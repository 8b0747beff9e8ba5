// The session helper's decoder (native/session/decode.c) in-process, under AddressSanitizer and UBSan:
// frames built by hand, fed whole, cut at every offset and one byte at a time by a C driver that fails
// when any feed logs anything but the whole one's (as ws's Receiver is tested by writing bytes into
// it), and a fuzz run with a fixed budget (decoder-fuzz.c).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CFLAGS, NATIVE } from './helper-sources.ts';

const SANITIZE = ['-fsanitize=address,undefined', '-fno-sanitize-recover=all', '-fno-omit-frame-pointer', '-g', '-O1'];
const here = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));
// Any report fails the run; leaks too (LeakSanitizer runs at exit).
const SANITIZER_ENV = { ...process.env, ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:exitcode=23', UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1' };
let scratch: string;
let driver: string;
let fuzz: string;

test.before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'opencode-pty-decoder-'));
  driver = join(scratch, 'decoder-driver');
  fuzz = join(scratch, 'decoder-fuzz');
  const common = [here('decoder-events.c'), join(NATIVE, 'decode.c')];
  execFileSync('cc', [...CFLAGS, ...SANITIZE, '-o', driver, here('decoder-driver.c'), ...common]);
  execFileSync('cc', [...CFLAGS, ...SANITIZE, '-o', fuzz, here('decoder-fuzz.c'), ...common]);
});

test.after(() => rmSync(scratch, { recursive: true, force: true }));

/** 1 byte type, 4 bytes length BE, payload: built here, never by the protocol's encoder. */
function frame(type: number, payload: number[] | string = []): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : Buffer.from(payload);
  const header = Buffer.from([type, 0, 0, 0, 0]);
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}
const header = (type: number, length: number) => {
  const bytes = Buffer.from([type, 0, 0, 0, 0]);
  bytes.writeUInt32BE(length >>> 0, 1);
  return bytes;
};
const T = { HELLO: 0x01, START: 0x03, INPUT: 0x05, OUTPUT: 0x06, RESIZE: 0x07, SIGNAL: 0x08, STOP: 0x09, CREDIT: 0x0d, END_INPUT: 0x0e };
const u32 = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];

/** The driver's log of `bytes` (every cut logs the same, or it fails); lines. */
function decoded(version: number, bytes: Buffer, credit?: number, role?: 'observe'): string[] {
  const args = [String(version), credit === undefined ? '-' : String(credit), ...(role ? [role] : [])];
  const run = spawnSync(driver, args, { input: bytes, env: SANITIZER_ENV, encoding: 'utf8' });
  assert.is(run.status, 0, `driver: ${run.stderr}`);
  assert.is(run.stderr, '', 'no sanitizer report');
  return run.stdout.split('\n').filter(Boolean);
}

test('every frame a client sends, in one stream cut at every offset: the same effects in the same order', () => {
  const bytes = Buffer.concat([
    frame(T.INPUT, 'ab'),
    frame(T.RESIZE, [0, 24, 0, 80]),
    frame(T.INPUT, 'c'),
    frame(T.SIGNAL, [2]),
    frame(T.CREDIT, u32(4096)),
    frame(T.INPUT, 'de'),
    frame(T.END_INPUT),
    frame(T.STOP),
  ]);
  assert.equal(decoded(2, bytes), ['input 6162', 'resize 24 80', 'input 63', 'signal 2', 'input 6465', 'end-input', 'stop']);
});

test('after STOP: RESIZE and SIGNAL are discarded, INPUT is handed on (frames.c drops it), END_INPUT too', () => {
  const bytes = Buffer.concat([frame(T.STOP), frame(T.RESIZE, [0, 1, 0, 1]), frame(T.SIGNAL, [15]), frame(T.INPUT, 'x'), frame(T.END_INPUT), frame(T.STOP)]);
  assert.equal(decoded(2, bytes), ['stop', 'input 78']);
});

test('version 1 does not know END_INPUT: an unknown type, judged on its header', () => {
  assert.equal(decoded(1, Buffer.concat([frame(T.INPUT, 'a'), frame(T.END_INPUT)])), ['input 61', 'end 5 1 protocol error: unknown frame type 0x0e']);
});

test('lengths are judged on the header, before a payload byte: oversize INPUT, a RESIZE of 5, an empty SIGNAL', () => {
  assert.equal(decoded(2, header(T.INPUT, 32769)), ['end 5 1 protocol error: INPUT payload of 32769 bytes is outside 1..32768']);
  assert.equal(decoded(2, header(T.INPUT, 0xffffffff)), ['end 5 1 protocol error: INPUT payload of 4294967295 bytes is outside 1..32768']);
  assert.equal(decoded(2, header(T.RESIZE, 5)), ['end 5 1 protocol error: RESIZE payload of 5 bytes is outside 4..4']);
  assert.equal(decoded(2, header(T.SIGNAL, 0)), ['end 5 1 protocol error: SIGNAL payload of 0 bytes is outside 1..1']);
});

test('INPUT beyond the credit granted is FLOW on the header; within it, whole', () => {
  assert.equal(decoded(2, Buffer.concat([frame(T.INPUT, 'abc'), frame(T.INPUT, 'def')]), 5), ['input 616263', 'end 5 9 peer sent 3 bytes with 2 of credit']);
});

test('frames a client never sends: server frames, HELLO and START during a session', () => {
  assert.equal(decoded(2, frame(T.OUTPUT, 'x')), ['end 5 1 protocol error: OUTPUT is not sent by a client']);
  assert.equal(decoded(2, frame(T.HELLO, [0, 0, 0, 0, 0, 1, 0, 2])), ['end 5 1 protocol error: unexpected HELLO frame during a session']);
  assert.equal(decoded(1, header(0x7f, 0)), ['end 5 1 protocol error: unknown frame type 0x7f']);
});

test('fields: a zero size, a signal out of range or not allowed, credit of 0 or past the window, END_INPUT twice, INPUT after it', () => {
  assert.equal(decoded(2, frame(T.RESIZE, [0, 0, 0, 80])), ['end 5 1 protocol error: rows 0, cols 80: each must be 1..65535']);
  assert.equal(decoded(2, frame(T.SIGNAL, [65])), ['end 5 1 protocol error: signal 65 is outside 1..64']);
  assert.equal(decoded(2, frame(T.SIGNAL, [13])), ['end 5 1 signal 13 is not allowed']);
  assert.equal(decoded(2, frame(T.CREDIT, u32(0))), ['end 5 1 protocol error: credit 0 is outside 1..16777216']);
  assert.equal(decoded(2, frame(T.CREDIT, u32(16777216))), ['end 5 9 credit beyond the 16777216-byte window']);
  assert.equal(decoded(2, Buffer.concat([frame(T.END_INPUT), frame(T.END_INPUT)])), ['end-input', 'end 5 1 protocol error: END_INPUT sent twice']);
  assert.equal(decoded(2, Buffer.concat([frame(T.END_INPUT), frame(T.INPUT, 'z')])), ['end-input', 'end 5 1 protocol error: INPUT after END_INPUT']);
});

test('nothing is decoded after the first violation, however the rest is cut', () => {
  assert.equal(decoded(2, Buffer.concat([frame(T.SIGNAL, [0]), frame(T.INPUT, 'never'), frame(T.STOP)])), ['end 5 1 protocol error: signal 0 is outside 1..64']);
});

test('fuzz: generated and random bytes, a fixed budget, sanitizers clean and the same effects however cut', () => {
  const run = spawnSync(fuzz, ['400000', '3'], { env: SANITIZER_ENV, encoding: 'utf8' });
  assert.is(run.status, 0, `fuzz: ${run.stderr.slice(0, 4000)}`);
  assert.is(run.stderr, '', 'no sanitizer report');
  const inputs = Number(/(\d+) inputs/.exec(run.stdout)?.[1]);
  assert.ok(inputs >= 20_000, `${inputs} inputs in the budget`);
});

test('version 3: LIST, ATTACH and STOP_SESSION are requests, refused on their header during a session', () => {
  assert.equal(decoded(3, Buffer.concat([frame(T.INPUT, 'a'), frame(0x0f)])), ['input 61', 'end 5 1 protocol error: unexpected LIST frame during a session']);
  assert.equal(decoded(3, header(0x11, 21)), ['end 5 1 protocol error: unexpected ATTACH frame during a session']);
  assert.equal(decoded(3, header(0x15, 8)), ['end 5 1 protocol error: unexpected STOP_SESSION frame during a session']);
});

test('a kept session\'s observer: CREDIT is taken, INPUT, RESIZE, SIGNAL, END_INPUT and STOP are refused NOT_CONTROLLER on their header', () => {
  assert.equal(decoded(3, Buffer.concat([frame(T.CREDIT, u32(10)), header(T.INPUT, 3)]), undefined, 'observe'), ['end 5 14 INPUT from a connection that is not the controller']);
  for (const [type, payload, name] of [[T.RESIZE, [0, 1, 0, 1], 'RESIZE'], [T.SIGNAL, [2], 'SIGNAL'], [T.END_INPUT, [], 'END_INPUT'], [T.STOP, [], 'STOP']] as const) {
    assert.equal(decoded(3, frame(type, [...payload]), undefined, 'observe'), [`end 5 14 ${name} from a connection that is not the controller`], name);
  }
});

test.run();
