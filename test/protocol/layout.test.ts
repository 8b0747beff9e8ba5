// The per-type layout table and the header check that runs before any payload is buffered.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FrameType, HEADER_SIZE, Limits } from '../../src/protocol/constants.ts';
import { LAYOUT, layoutOf, parseHeader, typeCodeOf } from '../../src/protocol/layout.ts';
import { bytes } from './fixtures.ts';
import { throwsCode } from './helpers.ts';

test('every frame type has a layout, and names map back to their type byte', () => {
  for (const [name, code] of Object.entries(FrameType)) {
    const layout = layoutOf(code, 3);
    assert.ok(layout, name);
    assert.is(layout!.name, name.toLowerCase().replace('_', '-'));
    assert.is(typeCodeOf(layout!.name), code);
    assert.ok(layout!.min <= layout!.max && layout!.max <= Limits.MAX_FRAME_PAYLOAD, name);
  }
  assert.is(Object.keys(LAYOUT).length, Object.keys(FrameType).length);
  assert.is(layoutOf(0), undefined);
  assert.is(layoutOf(0x0e), undefined, 'END_INPUT is not a version 1 frame');
  assert.is(layoutOf(0x0f, 2), undefined);
  assert.is(layoutOf('toString' as never), undefined, 'no prototype keys');
});

test('parseHeader returns type and length of valid headers', () => {
  assert.equal(parseHeader(bytes('01 00000008'), 'to-server'), { type: FrameType.HELLO, length: 8 });
  assert.equal(parseHeader(bytes('03 00010000'), 'to-server'), { type: FrameType.START, length: Limits.MAX_FRAME_PAYLOAD });
  assert.equal(parseHeader(bytes('06 00008000'), 'to-client'), { type: FrameType.OUTPUT, length: Limits.MAX_IO_PAYLOAD });
  assert.equal(parseHeader(bytes('0d 00000004'), 'to-server'), { type: FrameType.CREDIT, length: 4 });
  assert.equal(parseHeader(bytes('0d 00000004'), 'to-client'), { type: FrameType.CREDIT, length: 4 });
  // Bytes past the header are not its business.
  assert.equal(parseHeader(bytes('09 00000000 ffff'), 'to-server'), { type: FrameType.STOP, length: 0 });
});

test('parseHeader refuses unknown types, wrong direction, wrong sizes, oversize lengths', () => {
  throwsCode(() => parseHeader(bytes('00 00000000'), 'to-server'), 'UNKNOWN_TYPE');
  throwsCode(() => parseHeader(bytes('80 00000000'), 'to-client'), 'UNKNOWN_TYPE');
  throwsCode(() => parseHeader(bytes('01 00000008'), 'to-client'), 'WRONG_DIRECTION');
  throwsCode(() => parseHeader(bytes('06 00000001'), 'to-server'), 'WRONG_DIRECTION');
  throwsCode(() => parseHeader(bytes('05 00000001'), 'to-client'), 'WRONG_DIRECTION');
  throwsCode(() => parseHeader(bytes('0b 0000000a'), 'to-server'), 'WRONG_DIRECTION');
  throwsCode(() => parseHeader(bytes('01 00000007'), 'to-server'), 'BAD_LENGTH');
  throwsCode(() => parseHeader(bytes('09 00000001'), 'to-server'), 'BAD_LENGTH');
  throwsCode(() => parseHeader(bytes('03 0000001b'), 'to-server'), 'BAD_LENGTH'); // below the fixed part + argv[0]
  throwsCode(() => parseHeader(bytes('03 00010001'), 'to-server'), 'OVERSIZE');
  throwsCode(() => parseHeader(bytes('05 00008001'), 'to-server'), 'OVERSIZE');
  throwsCode(() => parseHeader(bytes('0b 00000109'), 'to-client'), 'OVERSIZE'); // result of 256
  assert.throws(() => parseHeader(Buffer.alloc(HEADER_SIZE - 1), 'to-server'), RangeError);
});

test.run();
