// encodeFrame and errorFrame: the hand fixtures reproduced, round trips, refusals, bounded error text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { ErrorCode, FrameType, HEADER_SIZE, Limits } from '../../src/protocol/constants.ts';
import { FrameDecoder } from '../../src/protocol/decode.ts';
import { MAX_ERROR_TEXT, encodeFrame, errorFrame } from '../../src/protocol/encode.ts';
import type { Direction, Frame } from '../../src/protocol/frames.ts';
import { FIXTURES, bytes } from './fixtures.ts';
import { plain, throwsCode } from './helpers.ts';

const DIRECTION: Record<Frame['type'], Direction> = {
  hello: 'to-server', welcome: 'to-client', start: 'to-server', started: 'to-client',
  input: 'to-server', output: 'to-client', resize: 'to-server', signal: 'to-server',
  stop: 'to-server', stopped: 'to-client', exit: 'to-client', error: 'to-client', credit: 'to-server',
  'end-input': 'to-server', list: 'to-server', sessions: 'to-client', attach: 'to-server', attached: 'to-client',
  truncated: 'to-client', 'controller-changed': 'to-client', 'stop-session': 'to-server',
};

function roundTrip(frame: Frame): Frame[] {
  return new FrameDecoder(DIRECTION[frame.type]).push(encodeFrame(frame));
}

const START: Extract<Frame, { type: 'start' }> = {
  type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [],
};

for (const fixture of FIXTURES) {
  test(`encodes ${fixture.name} to the hand-written bytes`, () => {
    assert.is(encodeFrame(fixture.frame).toString('hex'), bytes(fixture.hex).toString('hex'));
  });
}

test('refuses frames the decoder would reject, with the decoder\'s codes', () => {
  const refusals: [Frame, string][] = [
    [{ type: 'hello', minVersion: 0, maxVersion: 1 }, 'BAD_VALUE'],
    [{ type: 'hello', minVersion: 2, maxVersion: 1 }, 'BAD_VALUE'],
    [{ type: 'hello', minVersion: 1, maxVersion: 0x10000 }, 'BAD_VALUE'],
    [{ type: 'welcome', version: 0 }, 'BAD_VALUE'],
    [{ ...START, rows: 0 }, 'BAD_VALUE'],
    [{ ...START, cols: 65536 }, 'BAD_VALUE'],
    [{ ...START, rows: 1.5 }, 'BAD_VALUE'],
    [{ ...START, cwdDev: -1n }, 'BAD_VALUE'],
    [{ ...START, cwdIno: 1n << 64n }, 'BAD_VALUE'],
    [{ ...START, argv: [] }, 'BAD_VALUE'],
    [{ ...START, argv: [''] }, 'BAD_VALUE'],
    [{ ...START, argv: ['a\0b'] }, 'BAD_VALUE'],
    [{ ...START, argv: ['\ud800'] }, 'BAD_UTF8'],
    [{ ...START, argv: Array(Limits.MAX_ARGC + 1).fill('x') }, 'TOO_MANY'],
    [{ ...START, argv: ['x'.repeat(Limits.MAX_STRING + 1)] }, 'OVERSIZE'],
    [{ ...START, argv: ['é'.repeat(Limits.MAX_STRING / 2 + 1)] }, 'OVERSIZE'], // counted in bytes
    [{ ...START, argv: Array(5).fill('x'.repeat(Limits.MAX_STRING)) }, 'OVERSIZE'], // frame size
    [{ ...START, env: Array.from({ length: Limits.MAX_ENVC + 1 }, (_, i) => ({ name: `N${i}`, value: '' })) }, 'TOO_MANY'],
    [{ ...START, env: [{ name: '', value: 'v' }] }, 'BAD_VALUE'],
    [{ ...START, env: [{ name: 'A=B', value: 'v' }] }, 'BAD_VALUE'],
    [{ ...START, env: [{ name: 'A', value: 'v\0' }] }, 'BAD_VALUE'],
    [{ ...START, env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }] }, 'BAD_VALUE'],
    [{ type: 'started', mainPid: 0, unit: 'a.service' }, 'BAD_VALUE'],
    [{ type: 'started', mainPid: 1, unit: '' }, 'BAD_VALUE'],
    [{ type: 'started', mainPid: 1, unit: 'a b' }, 'BAD_VALUE'],
    [{ type: 'started', mainPid: 1, unit: 'ü.service' }, 'BAD_VALUE'],
    [{ type: 'started', mainPid: 1, unit: 'u'.repeat(Limits.MAX_UNIT_NAME + 1) }, 'OVERSIZE'],
    [{ type: 'input', data: Buffer.alloc(0) }, 'BAD_LENGTH'],
    [{ type: 'output', data: Buffer.alloc(Limits.MAX_IO_PAYLOAD + 1) }, 'OVERSIZE'],
    [{ type: 'input', data: 'text' as never }, 'BAD_VALUE'],
    [{ type: 'resize', rows: 24, cols: 0 }, 'BAD_VALUE'],
    [{ type: 'signal', signal: 0 }, 'BAD_VALUE'],
    [{ type: 'signal', signal: Limits.MAX_SIGNAL + 1 }, 'BAD_VALUE'],
    [{ type: 'exit', code: 4, status: 0, result: 'success' }, 'BAD_VALUE'],
    [{ type: 'exit', code: 1, status: 2 ** 31, result: 'success' }, 'BAD_VALUE'],
    [{ type: 'exit', code: 1, status: 0, result: '' }, 'BAD_VALUE'],
    [{ type: 'exit', code: 1, status: 0, result: 'r'.repeat(Limits.MAX_RESULT + 1) }, 'OVERSIZE'],
    [{ type: 'error', code: 0, message: '' }, 'BAD_VALUE'],
    [{ type: 'error', code: 1, message: 'x'.repeat(MAX_ERROR_TEXT + 1) }, 'OVERSIZE'],
    [{ type: 'error', code: 1, message: 'bad \udc00' }, 'BAD_UTF8'],
    [{ type: 'credit', bytes: 0 }, 'BAD_VALUE'],
    [{ type: 'credit', bytes: Limits.MAX_WINDOW + 1 }, 'BAD_VALUE'],
    [{ type: 'nonsense' } as never, 'UNKNOWN_TYPE'],
  ];
  for (const [frame, code] of refusals) throwsCode(() => encodeFrame(frame), code as never);
});

test('START refusals carry the BAD_START wire code', () => {
  throwsCode(() => encodeFrame({ ...START, argv: [] }), 'BAD_VALUE', ErrorCode.BAD_START);
  throwsCode(() => encodeFrame({ type: 'signal', signal: 0 }), 'BAD_VALUE', ErrorCode.PROTOCOL);
});

test('limits themselves are encodable and decode back', () => {
  const edge: Frame[] = [
    { ...START, rows: 65535, cols: 65535, cwdDev: (1n << 64n) - 1n, argv: Array(Limits.MAX_ARGC).fill('x') },
    { ...START, env: Array.from({ length: Limits.MAX_ENVC }, (_, i) => ({ name: `N${i}`, value: 'v' })) },
    { ...START, argv: ['sh', 'x'.repeat(Limits.MAX_STRING)] },
    { type: 'output', data: Buffer.alloc(Limits.MAX_IO_PAYLOAD, 7) },
    { type: 'signal', signal: Limits.MAX_SIGNAL },
    { type: 'credit', bytes: Limits.MAX_WINDOW },
    { type: 'exit', code: 3, status: -(2 ** 31), result: 'r'.repeat(Limits.MAX_RESULT) },
    { type: 'started', mainPid: 0xffffffff, unit: 'u'.repeat(Limits.MAX_UNIT_NAME) },
    { type: 'error', code: 0xffff, message: 'm'.repeat(MAX_ERROR_TEXT) },
  ];
  for (const frame of edge) assert.equal(plain(roundTrip(frame)), plain([frame]), frame.type);
});

test('INPUT data from a view into a larger buffer encodes only the view', () => {
  const backing = Buffer.from('xxhelloxx');
  const wire = encodeFrame({ type: 'input', data: backing.subarray(2, 7) });
  assert.is(wire.toString('hex'), '0500000005' + Buffer.from('hello').toString('hex'));
  assert.is(wire.readUInt8(0), FrameType.INPUT);
});

test('errorFrame keeps short text and cuts long text at a character boundary', () => {
  assert.equal(errorFrame(ErrorCode.VERSION, 'unsupported protocol version'), {
    type: 'error', code: 2, message: 'unsupported protocol version',
  });
  // 'é' is 2 bytes, '€' 3, '😀' 4: with an odd offset the limit falls inside a character.
  for (const [prefix, char] of [['', 'é'], ['a', 'é'], ['', '€'], ['a', '€'], ['ab', '€'], ['', '😀'], ['a', '😀'], ['abc', '😀']] as const) {
    const frame = errorFrame(ErrorCode.INTERNAL, prefix + char.repeat(MAX_ERROR_TEXT));
    const text = Buffer.from(frame.message, 'utf8');
    assert.ok(text.length <= MAX_ERROR_TEXT && text.length > MAX_ERROR_TEXT - 4, `${prefix}${char}: ${text.length}`);
    assert.ok(new TextDecoder('utf-8', { fatal: true }).decode(text) === frame.message, 'valid UTF-8');
    assert.ok(frame.message.startsWith(prefix) && !frame.message.includes('\ufffd'), 'no character was split');
    const [decoded] = new FrameDecoder('to-client').push(encodeFrame(frame));
    assert.equal(decoded, frame);
  }
  const exact = 'x'.repeat(MAX_ERROR_TEXT);
  assert.is(errorFrame(1, exact).message, exact);
  assert.is(errorFrame(1, 'lone \ud800 surrogate').message, 'lone \ufffd surrogate');
  throwsCode(() => errorFrame(0, 'x'), 'BAD_VALUE');
  assert.is(encodeFrame(errorFrame(1, 'x'.repeat(100_000))).length, HEADER_SIZE + Limits.MAX_IO_PAYLOAD);
});

// Generators for valid frames, each within every rule the decoder applies.
const u16pos = fc.integer({ min: 1, max: 0xffff });
const token = (max: number) => fc.string({ unit: fc.constantFrom(...'abcxyz019-_.@:\\'.split('')), minLength: 1, maxLength: max });
const text = fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !s.includes('\0'));
const envName = text.filter((s) => s.length > 0 && !s.includes('='));
const bytesArb = fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => Buffer.from(b));
const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.tuple(u16pos, u16pos).map(([a, b]) => ({ type: 'hello', minVersion: Math.min(a, b), maxVersion: Math.max(a, b) }) as Frame),
  u16pos.map((version) => ({ type: 'welcome', version }) as Frame),
  fc.record({
    type: fc.constant('start' as const),
    rows: u16pos,
    cols: u16pos,
    cwdDev: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    cwdIno: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    argv: fc.tuple(text.filter((s) => s.length > 0), fc.array(text, { maxLength: 8 })).map(([a, rest]) => [a, ...rest]),
    env: fc.uniqueArray(fc.record({ name: envName, value: text }), { maxLength: 8, selector: (e) => e.name }),
  }),
  fc.record({ type: fc.constant('started' as const), mainPid: fc.integer({ min: 1, max: 0xffffffff }), unit: token(Limits.MAX_UNIT_NAME) }),
  bytesArb.map((data) => ({ type: 'input', data }) as Frame),
  bytesArb.map((data) => ({ type: 'output', data }) as Frame),
  fc.record({ type: fc.constant('resize' as const), rows: u16pos, cols: u16pos }),
  fc.record({ type: fc.constant('signal' as const), signal: fc.integer({ min: 1, max: Limits.MAX_SIGNAL }) }),
  fc.constant({ type: 'stop' } as Frame),
  fc.constant({ type: 'stopped' } as Frame),
  fc.record({ type: fc.constant('exit' as const), code: fc.constantFrom(0, 1, 2, 3), status: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), result: token(Limits.MAX_RESULT) }),
  fc.record({ type: fc.constant('error' as const), code: u16pos, message: fc.string({ unit: 'grapheme', maxLength: 60 }) }),
  fc.record({ type: fc.constant('credit' as const), bytes: fc.integer({ min: 1, max: Limits.MAX_WINDOW }) }),
);

test('property: encode then decode is the identity for valid frames', () => {
  fc.assert(
    fc.property(frameArb, (frame) => {
      assert.equal(plain(roundTrip(frame)), plain([frame]));
    }),
    { numRuns: 3000 },
  );
});

test('property: a stream of encoded frames survives any chunking', () => {
  fc.assert(
    fc.property(fc.array(frameArb.filter((f) => DIRECTION[f.type] === 'to-client' || f.type === 'credit'), { maxLength: 10 }), fc.integer({ min: 1, max: 50 }), (frames, size) => {
      const wire = Buffer.concat(frames.map((frame) => encodeFrame(frame)));
      const decoder = new FrameDecoder('to-client');
      const got: Frame[] = [];
      for (let at = 0; at < wire.length; at += size) got.push(...decoder.push(wire.subarray(at, at + size)));
      assert.equal(plain(got), plain(frames));
    }),
  );
});

test.run();
