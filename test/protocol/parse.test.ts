// parsePayload (through the decoder, as a peer's bytes arrive): every field rule and every limit.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, FrameType, Limits } from '../../src/protocol/constants.ts';
import { FrameDecoder, parsePayload } from '../../src/protocol/decode.ts';
import { be, bytes, frameHex, startHex } from './fixtures.ts';
import { plain, rejects, throwsCode } from './helpers.ts';

test('the largest START payload passes the header check', () => {
  const padding = Limits.MAX_FRAME_PAYLOAD - 24 - 4 * 5;
  const parts = ['sh', 'a'.repeat(Limits.MAX_STRING), 'b'.repeat(Limits.MAX_STRING), 'c'.repeat(Limits.MAX_STRING)];
  const rest = padding - parts.reduce((sum, s) => sum + s.length, 0);
  const frames = new FrameDecoder('to-server').push(bytes(startHex({ argv: [...parts, 'd'.repeat(rest)] })));
  assert.is((frames[0] as { argv: string[] }).argv.length, 5);
});

test('fixed-size frames with any other length are BAD_LENGTH', () => {
  rejects('to-server', '01 00000009 4f435054000100010000', 'BAD_LENGTH');
  rejects('to-client', '02 00000001 01', 'BAD_LENGTH');
  rejects('to-server', '07 00000005 0018005000', 'BAD_LENGTH');
  rejects('to-server', '08 00000000', 'BAD_LENGTH');
  rejects('to-server', '09 00000001 00', 'BAD_LENGTH');
  rejects('to-client', '0a 00000001 00', 'BAD_LENGTH');
  rejects('to-server', '0d 00000003 000001', 'BAD_LENGTH');
});

test('HELLO: magic and version range', () => {
  rejects('to-server', '01 00000008 4f435055 0001 0001', 'BAD_VALUE');
  rejects('to-server', '01 00000008 4f435054 0000 0001', 'BAD_VALUE');
  rejects('to-server', '01 00000008 4f435054 0003 0002', 'BAD_VALUE');
  rejects('to-client', '02 00000002 0000', 'BAD_VALUE');
});

test('START: argc and envc limits', () => {
  const argv = Array.from({ length: Limits.MAX_ARGC }, () => 'x');
  assert.is((new FrameDecoder('to-server').push(bytes(startHex({ argv })))[0] as { argv: string[] }).argv.length, 512);
  rejects('to-server', startHex({ argv: [...argv, 'x'] }), 'TOO_MANY', ErrorCode.BAD_START);
  rejects('to-server', startHex({ argv: [], tail: '00000000' }), 'BAD_VALUE', ErrorCode.BAD_START);
  const env = Array.from({ length: Limits.MAX_ENVC }, (_, i) => [`V${i}`, 'v'] as [string, string]);
  assert.is((new FrameDecoder('to-server').push(bytes(startHex({ env })))[0] as { env: unknown[] }).env.length, 128);
  rejects('to-server', startHex({ env: [...env, ['W', 'w']] }), 'TOO_MANY', ErrorCode.BAD_START);
  // A count that promises more entries than the payload holds.
  rejects('to-server', startHex({ argv: ['sh'], argc: 2 }), 'BAD_LENGTH', ErrorCode.BAD_START);
  rejects('to-server', startHex({ env: [['A', 'b']], envc: 2 }), 'BAD_LENGTH', ErrorCode.BAD_START);
});

test('START: string size limit, checked before the string is read', () => {
  const max = 'y'.repeat(Limits.MAX_STRING);
  assert.ok(new FrameDecoder('to-server').push(bytes(startHex({ argv: ['sh', max] }))).length === 1);
  rejects('to-server', startHex({ argv: ['sh', max + 'y'] }), 'OVERSIZE', ErrorCode.BAD_START);
  rejects('to-server', startHex({ env: [['N', max + 'y']] }), 'OVERSIZE', ErrorCode.BAD_START);
  rejects('to-server', startHex({ env: [[max + 'y', '']] }), 'OVERSIZE', ErrorCode.BAD_START);
  // A length prefix of 4 GiB in a small frame.
  const fixed = be.u16(24) + be.u16(80) + be.u64(1n) + be.u64(2n) + be.u16(1) + be.u16(0);
  rejects('to-server', frameHex(FrameType.START, fixed + 'ffffffff 7368'), 'OVERSIZE', ErrorCode.BAD_START);
  rejects('to-server', frameHex(FrameType.START, fixed + '00000005 7368'), 'BAD_LENGTH', ErrorCode.BAD_START);
});

test('START: rows and cols 1..65535', () => {
  rejects('to-server', startHex({ rows: 0 }), 'BAD_VALUE', ErrorCode.BAD_START);
  rejects('to-server', startHex({ cols: 0 }), 'BAD_VALUE', ErrorCode.BAD_START);
  rejects('to-server', '07 00000004 0000 0050', 'BAD_VALUE', ErrorCode.PROTOCOL);
  rejects('to-server', '07 00000004 0018 0000', 'BAD_VALUE', ErrorCode.PROTOCOL);
});

test('START: strict UTF-8, no NUL, sane environment names, no trailing bytes', () => {
  const fixed = be.u16(24) + be.u16(80) + be.u64(1n) + be.u64(2n);
  const one = (hex: string) => frameHex(FrameType.START, fixed + be.u16(1) + be.u16(0) + hex);
  rejects('to-server', one('00000002 c328'), 'BAD_UTF8', ErrorCode.BAD_START); // bad continuation
  rejects('to-server', one('00000002 c0af'), 'BAD_UTF8', ErrorCode.BAD_START); // overlong '/'
  rejects('to-server', one('00000003 eda080'), 'BAD_UTF8', ErrorCode.BAD_START); // UTF-16 surrogate
  rejects('to-server', one('00000002 e282'), 'BAD_UTF8', ErrorCode.BAD_START); // truncated sequence
  rejects('to-server', one('00000004 f4908080'), 'BAD_UTF8', ErrorCode.BAD_START); // above U+10FFFF
  rejects('to-server', one('00000003 730068'), 'BAD_VALUE', ErrorCode.BAD_START); // NUL
  rejects('to-server', one('00000000'), 'BAD_VALUE', ErrorCode.BAD_START); // empty argv[0]
  rejects('to-server', one('00000002 7368 00'), 'BAD_LENGTH', ErrorCode.BAD_START); // trailing byte
  rejects('to-server', startHex({ env: [['', 'v']] }), 'BAD_VALUE', ErrorCode.BAD_START);
  rejects('to-server', startHex({ env: [['A=B', 'v']] }), 'BAD_VALUE', ErrorCode.BAD_START);
  rejects('to-server', startHex({ env: [['A\0', 'v']] }), 'BAD_VALUE', ErrorCode.BAD_START);
  rejects('to-server', startHex({ env: [['A', 'v\0w']] }), 'BAD_VALUE', ErrorCode.BAD_START);
  rejects('to-server', startHex({ env: [['A', '1'], ['A', '2']] }), 'BAD_VALUE', ErrorCode.BAD_START);
  // A byte-order mark is data and survives.
  const [frame] = new FrameDecoder('to-server').push(bytes(one('00000005 efbbbf7368')));
  assert.equal((frame as { argv: string[] }).argv, ['\ufeffsh']);
});

test('STARTED: pid and unit name', () => {
  rejects('to-client', '04 00000005 00000000 61', 'BAD_VALUE');
  rejects('to-client', '04 00000006 00000001 6120', 'BAD_VALUE'); // space
  rejects('to-client', '04 00000006 00000001 61ff', 'BAD_VALUE'); // not ASCII
  rejects('to-client', '04 00000006 00000001 6100', 'BAD_VALUE'); // NUL
  rejects('to-client', '04 00000004 00000001', 'BAD_LENGTH'); // empty name
  const name = 'u'.repeat(Limits.MAX_UNIT_NAME);
  const [frame] = new FrameDecoder('to-client').push(bytes(frameHex(FrameType.STARTED, '00000001' + Buffer.from(name).toString('hex'))));
  assert.is((frame as { unit: string }).unit, name);
});

test('SIGNAL 1..MAX_SIGNAL, CREDIT 1..MAX_WINDOW', () => {
  rejects('to-server', '08 00000001 00', 'BAD_VALUE');
  rejects('to-server', '08 00000001 41', 'BAD_VALUE'); // 65
  assert.equal(plain(new FrameDecoder('to-server').push(bytes('08 00000001 40'))), [{ type: 'signal', signal: 64 }]);
  rejects('to-server', '0d 00000004 00000000', 'BAD_VALUE');
  rejects('to-client', '0d 00000004 01000001', 'BAD_VALUE'); // MAX_WINDOW + 1
  assert.equal(plain(new FrameDecoder('to-client').push(bytes('0d 00000004 01000000'))), [{ type: 'credit', bytes: Limits.MAX_WINDOW }]);
});

test('EXIT: code 0..3, exact result length, ASCII result', () => {
  rejects('to-client', '0b 0000000a 04 00000000 00000001 78', 'BAD_VALUE');
  rejects('to-client', '0b 0000000b 01 00000000 00000001 7878', 'BAD_LENGTH'); // trailing
  rejects('to-client', '0b 0000000a 01 00000000 00000002 78', 'BAD_LENGTH'); // past the end
  rejects('to-client', '0b 0000000a 01 00000000 00000100 78', 'OVERSIZE');
  rejects('to-client', '0b 0000000a 01 00000000 00000001 c3', 'BAD_VALUE');
  rejects('to-client', '0b 00000009 01 00000000 00000000', 'BAD_LENGTH');
});

test('ERROR: code and strict UTF-8 text up to MAX_IO_PAYLOAD - 2 bytes', () => {
  rejects('to-client', '0c 00000002 0000', 'BAD_VALUE');
  rejects('to-client', '0c 00000004 0001 c328', 'BAD_UTF8');
  rejects('to-client', '0c 00000001 00', 'BAD_LENGTH');
  const text = 'e'.repeat(Limits.MAX_IO_PAYLOAD - 2);
  const [frame] = new FrameDecoder('to-client').push(bytes(frameHex(FrameType.ERROR, '0063' + Buffer.from(text).toString('hex'))));
  assert.equal(frame, { type: 'error', code: 99, message: text }, 'unknown codes pass through');
});

test('parsePayload refuses an unknown type and a wrong length', () => {
  throwsCode(() => parsePayload(0x42 as never, Buffer.alloc(0)), 'UNKNOWN_TYPE');
  throwsCode(() => parsePayload(FrameType.RESIZE, Buffer.alloc(3)), 'BAD_LENGTH');
  throwsCode(() => parsePayload(FrameType.INPUT, Buffer.alloc(Limits.MAX_IO_PAYLOAD + 1)), 'OVERSIZE');
});

test.run();
