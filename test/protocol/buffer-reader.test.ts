// BufferReader: big-endian fields, strict UTF-8, and every overrun a ProtocolError.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { BufferReader } from '../../src/protocol/buffer-reader.ts';
import { bytes } from './fixtures.ts';
import { throwsCode } from './helpers.ts';

test('reads big-endian fields in order', () => {
  const reader = new BufferReader(bytes('ff 0102 01020304 fffffffe 0102030405060708 6869'));
  assert.is(reader.u8('a'), 0xff);
  assert.is(reader.u16('b'), 0x0102);
  assert.is(reader.u32('c'), 0x01020304);
  assert.is(reader.i32('d'), -2);
  assert.is(reader.u64('e'), 0x0102030405060708n);
  assert.is(reader.remaining, 2);
  assert.is(reader.utf8(2, 'f'), 'hi');
  reader.end('frame');
});

test('a read past the end is BAD_LENGTH with the reader\'s wire code', () => {
  throwsCode(() => new BufferReader(bytes('01')).u16('x'), 'BAD_LENGTH', ErrorCode.PROTOCOL);
  throwsCode(() => new BufferReader(bytes('0102'), ErrorCode.BAD_START).bytes(3, 'x'), 'BAD_LENGTH', ErrorCode.BAD_START);
  const reader = new BufferReader(bytes('0102'));
  reader.u8('x');
  throwsCode(() => reader.end('frame'), 'BAD_LENGTH');
});

test('UTF-8 is strict and keeps a byte-order mark', () => {
  throwsCode(() => new BufferReader(bytes('c328')).utf8(2, 'x'), 'BAD_UTF8');
  throwsCode(() => new BufferReader(bytes('eda080')).utf8(3, 'x'), 'BAD_UTF8');
  assert.is(new BufferReader(bytes('efbbbf41')).utf8(4, 'x'), '\ufeffA');
  assert.is(new BufferReader(bytes('41ff')).latin1(2, 'x'), 'A\xff');
});

test.run();
