// FrameDecoder: hand-written fixtures split at every offset, header-first rejection, failure, hostile input.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { FrameType, HEADER_SIZE, Limits } from '../../src/protocol/constants.ts';
import { FrameDecoder, parsePayload } from '../../src/protocol/decode.ts';
import { ProtocolError } from '../../src/protocol/errors.ts';
import type { Direction, Frame } from '../../src/protocol/frames.ts';
import { FIXTURES, be, bytes, frameHex } from './fixtures.ts';
import { plain, rejects, throwsCode } from './helpers.ts';

function decodeAll(direction: Direction, chunks: Buffer[]): Frame[] {
  const decoder = new FrameDecoder(direction);
  const frames = chunks.flatMap((chunk) => decoder.push(chunk));
  assert.is(decoder.buffered, 0, 'nothing left over');
  decoder.end();
  return frames;
}

for (const fixture of FIXTURES) {
  test(`decodes ${fixture.name}, whole and split at every offset`, () => {
    const wire = bytes(fixture.hex);
    const want = plain([fixture.frame]);
    assert.equal(plain(decodeAll(fixture.direction, [wire])), want);
    const single = [...wire].map((byte) => Buffer.from([byte]));
    assert.equal(plain(decodeAll(fixture.direction, single)), want, 'byte by byte');
    for (let cut = 0; cut <= wire.length; cut++) {
      const got = decodeAll(fixture.direction, [wire.subarray(0, cut), wire.subarray(cut)]);
      assert.equal(plain(got), want, `split at ${cut}`);
    }
  });
}

for (const direction of ['to-server', 'to-client'] as const) {
  test(`several ${direction} frames in one chunk, and that stream split at every offset`, () => {
    const chosen = FIXTURES.filter((f) => f.direction === direction);
    const wire = Buffer.concat(chosen.map((f) => bytes(f.hex)));
    const want = plain(chosen.map((f) => f.frame));
    assert.equal(plain(decodeAll(direction, [wire])), want);
    for (let cut = 0; cut <= wire.length; cut++) {
      assert.equal(plain(decodeAll(direction, [wire.subarray(0, cut), wire.subarray(cut)])), want, `split at ${cut}`);
    }
  });
}

test('INPUT/OUTPUT data never aliases the chunk the caller reuses', () => {
  for (const [direction, hex] of [['to-server', '05 00000003 6c730d'], ['to-client', '06 00000002 6869']] as const) {
    const whole = bytes(hex);
    const frame = new FrameDecoder(direction).push(whole)[0] as { data: Buffer };
    const before = frame.data.toString('hex');
    whole.fill(0);
    assert.is(frame.data.toString('hex'), before, 'in-place payload copied');
    const payload = bytes(hex).subarray(HEADER_SIZE);
    const parsed = parsePayload(direction === 'to-server' ? FrameType.INPUT : FrameType.OUTPUT, payload) as { data: Buffer };
    payload.fill(0);
    assert.is(parsed.data.toString('hex'), before, 'parsePayload copies');
  }
});

test('largest INPUT and OUTPUT pass; one more byte is OVERSIZE after the header alone', () => {
  const max = Limits.MAX_IO_PAYLOAD;
  const [input] = new FrameDecoder('to-server').push(bytes(frameHex(FrameType.INPUT, 'ab'.repeat(max))));
  assert.is((input as { data: Buffer }).data.length, max);
  for (const [direction, type] of [['to-server', FrameType.INPUT], ['to-client', FrameType.OUTPUT]] as const) {
    const decoder = new FrameDecoder(direction);
    throwsCode(() => decoder.push(bytes(be.u8(type) + be.u32(max + 1))), 'OVERSIZE');
    assert.ok(decoder.buffered <= HEADER_SIZE);
  }
  rejects('to-server', '05 00000000', 'BAD_LENGTH');
  rejects('to-client', '06 00000000', 'BAD_LENGTH');
});

test('unknown types and oversize lengths are refused on the header alone, nothing buffered', () => {
  const headers = [
    ['00 00000000', 'UNKNOWN_TYPE'],
    ['0e 00000001', 'UNKNOWN_TYPE'],
    ['ff ffffffff', 'UNKNOWN_TYPE'],
    ['03 00010001', 'OVERSIZE'], // START one byte over MAX_FRAME_PAYLOAD
    ['03 ffffffff', 'OVERSIZE'],
    ['0c 00008001', 'OVERSIZE'], // ERROR over MAX_IO_PAYLOAD
    ['04 00000104', 'OVERSIZE'], // STARTED with a 256-byte unit name
    ['0d ffffffff', 'BAD_LENGTH'], // CREDIT is fixed at 4
  ] as const;
  for (const [hex, code] of headers) {
    const direction: Direction = hex.startsWith('04') || hex.startsWith('0c') ? 'to-client' : 'to-server';
    const decoder = new FrameDecoder(direction);
    // Only the five header bytes are pushed: the verdict cannot depend on payload.
    throwsCode(() => decoder.push(bytes(hex)), code);
    assert.ok(decoder.buffered <= HEADER_SIZE, `${hex}: buffered ${decoder.buffered}`);
    assert.is(decoder.needed, 0);
  }
  const decoder = new FrameDecoder('to-server');
  throwsCode(() => decoder.push(Buffer.concat([bytes('03 00010001'), Buffer.alloc(70_000)])), 'OVERSIZE');
  assert.ok(decoder.buffered <= HEADER_SIZE, 'payload bytes after a bad header are not kept');
});

test('frames are accepted only from the peer that may send them', () => {
  for (const fixture of FIXTURES) {
    if (fixture.frame.type === 'credit') continue;
    const other: Direction = fixture.direction === 'to-server' ? 'to-client' : 'to-server';
    const decoder = new FrameDecoder(other);
    throwsCode(() => decoder.push(bytes(fixture.hex).subarray(0, HEADER_SIZE)), 'WRONG_DIRECTION');
  }
});

test('after one error the decoder stays failed with the same error', () => {
  const decoder = new FrameDecoder('to-server');
  assert.equal(plain(decoder.push(bytes('09 00000000'))), [{ type: 'stop' }]);
  const first = throwsCode(() => decoder.push(bytes('ee 00000000')), 'UNKNOWN_TYPE');
  let again: unknown;
  try {
    decoder.push(bytes('09 00000000'));
  } catch (error) {
    again = error;
  }
  assert.is(again, first);
  assert.is(decoder.error, first);
  assert.throws(() => decoder.end(), (error: unknown) => error === first);
});

test('end() inside a frame is BAD_LENGTH; between frames it is quiet', () => {
  const decoder = new FrameDecoder('to-client');
  decoder.push(bytes('06 00000004 6869'));
  assert.is(decoder.buffered, 7);
  throwsCode(() => decoder.end(), 'BAD_LENGTH');
  const header = new FrameDecoder('to-client');
  header.push(bytes('06 0000'));
  throwsCode(() => header.end(), 'BAD_LENGTH');
  const clean = new FrameDecoder('to-client');
  clean.push(bytes('0a 00000000'));
  clean.end();
  assert.ok(clean.atBoundary);
});

test('needed counts down to the end of the current header or payload', () => {
  const decoder = new FrameDecoder('to-server');
  assert.is(decoder.needed, HEADER_SIZE);
  decoder.push(bytes('07 0000'));
  assert.is(decoder.needed, 2);
  decoder.push(bytes('0004'));
  assert.is(decoder.needed, 4);
  assert.ok(!decoder.atBoundary);
  assert.equal(plain(decoder.push(bytes('0018 0050'))), [{ type: 'resize', rows: 24, cols: 80 }]);
  assert.is(decoder.needed, HEADER_SIZE);
  assert.ok(decoder.atBoundary);
});

test('property: arbitrary bytes in arbitrary chunks throw nothing but ProtocolError', () => {
  // Biased towards valid type bytes and small lengths, so parsers are reached, not only the header check.
  const header = fc.tuple(fc.integer({ min: 0, max: 0x0f }), fc.integer({ min: 0, max: 80 })).map(([type, length]) =>
    Buffer.from([type, 0, 0, 0, length]),
  );
  const piece = fc.oneof(fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)), header);
  for (const direction of ['to-server', 'to-client'] as const) {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1 }), (pieces, sizes) => {
        const stream = Buffer.concat(pieces);
        const decoder = new FrameDecoder(direction);
        let offset = 0;
        try {
          for (let i = 0; offset < stream.length; i++) {
            const size = sizes[i % sizes.length]!;
            decoder.push(stream.subarray(offset, offset + size));
            offset += size;
          }
          decoder.end();
        } catch (error) {
          if (!(error instanceof ProtocolError)) throw error;
        }
        assert.ok(decoder.buffered <= Limits.MAX_FRAME_PAYLOAD + HEADER_SIZE);
      }),
      { numRuns: 2000 },
    );
  }
});

test('property: the fixture stream in random chunks decodes to the same frames', () => {
  const stream = Buffer.concat(FIXTURES.filter((f) => f.direction === 'to-client').map((f) => bytes(f.hex)));
  const want = plain(FIXTURES.filter((f) => f.direction === 'to-client').map((f) => f.frame));
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 20 }), (cuts) => {
      const points = [0, ...cuts.sort((a, b) => a - b), stream.length];
      const chunks = points.slice(1).map((end, i) => stream.subarray(points[i], end));
      assert.equal(plain(decodeAll('to-client', chunks)), want);
    }),
  );
});

test.run();
