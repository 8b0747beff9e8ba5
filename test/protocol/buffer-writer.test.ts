// BufferWriter: big-endian fields into a buffer of the size computed in advance, and nothing else.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BufferWriter } from '../../src/protocol/buffer-writer.ts';

test('writes big-endian fields in order', () => {
  const out = new BufferWriter(21).u8(0xff).u16(0x0102).u32(0x01020304).i32(-2).u64(0x0102030405060708n).bytes(Buffer.from('hi')).finish();
  assert.is(out.toString('hex'), 'ff' + '0102' + '01020304' + 'fffffffe' + '0102030405060708' + '6869');
});

test('a size computed wrong is caught, not sent', () => {
  assert.throws(() => new BufferWriter(3).u16(1).finish(), /size mismatch/);
  assert.throws(() => new BufferWriter(1).u16(1), RangeError);
});

test.run();
