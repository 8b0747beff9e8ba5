// Version 3 of the codec (kept sessions): hand-written bytes for every frame it changes or adds, split at every
// offset; versions 1 and 2 do not know its frames; each field is checked as strictly as version 2's.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import fc from 'fast-check';
import * as assert from 'uvu/assert';
import { ErrorCode, FrameType, Limits } from '../../src/protocol/constants.ts';
import { FrameDecoder } from '../../src/protocol/decode.ts';
import { encodeFrame } from '../../src/protocol/encode.ts';
import { sessionsFrame } from '../../src/protocol/encode-keep.ts';
import type { Direction, Frame, SessionEntry } from '../../src/protocol/frames.ts';
import { layoutOf } from '../../src/protocol/layout.ts';
import { ProtocolError } from '../../src/protocol/errors.ts';
import { be, bytes, docHex, frameHex } from './fixtures.ts';
import { plain, throwsCode } from './helpers.ts';

const ID = 0xa3c9e01b2d4f5; // 13 hex digits: what sessionIdOf(unit) yields
const ID_HEX = '000a3c9e01b2d4f5';
const UNIT_HEX = `000d ${Buffer.from('pty-7.service').toString('hex')}`;
const text = (value: string) => be.u16(Buffer.byteLength(value)) + Buffer.from(value).toString('hex');

const ENTRY: SessionEntry = {
  id: ID, state: 3, controllers: 0, observers: 0, rows: 24, cols: 80, programPid: 4243, mainPid: 4242,
  startedAtMs: 1_796_601_600_000, keepMs: 600_000, deadlineMs: 1_796_602_500_000, oldest: 0n, next: 0x2400n,
  fresh: true, endCode: 0, endStatus: 0, origin: 1, label: 'build', program: 'make', cwd: '/home/ada/src',
};
const ENTRY_HEX = [
  ID_HEX, '03 00 00 0018 0050 00001093 00001092', be.u64(1_796_601_600_000n), be.u32(600_000), be.u64(1_796_602_500_000n),
  '0000000000000000 0000000000002400 01 00 00000000 01', text('build'), text('make'), text('/home/ada/src'),
].join(' ');

/** The bytes as docs/protocol.md shows them, written by hand. */
const V3_FIXTURES: { name: string; direction: Direction; hex: string; frame: Frame }[] = [
  {
    name: 'START kept for 10 minutes with the default ring and a label',
    direction: 'to-server',
    hex: '03 0000002d  0018 0050 0000000000000001 0000000000000002 0001 0000 00000002 7368  000927c0 00000000 0005 6275696c64',
    frame: { type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], keepMs: 600_000, retainBytes: 0, label: 'build' },
  },
  {
    name: 'STARTED with the session id',
    direction: 'to-client',
    hex: `04 00000021  00001093 00001092 ${UNIT_HEX} 0000 ${ID_HEX}`,
    frame: { type: 'started', programPid: 4243, mainPid: 4242, unit: 'pty-7.service', droppedEnv: [], sessionId: ID },
  },
  { name: 'LIST', direction: 'to-server', hex: '0f 00000000', frame: { type: 'list' } },
  { name: 'SESSIONS, empty', direction: 'to-client', hex: '10 00000002 0000', frame: { type: 'sessions', sessions: [] } },
  {
    name: 'SESSIONS with one detached session',
    direction: 'to-client',
    hex: frameHex(FrameType.SESSIONS, `0001 ${ENTRY_HEX}`),
    frame: { type: 'sessions', sessions: [ENTRY] },
  },
  {
    name: 'ATTACH to control from offset 4096',
    direction: 'to-server',
    hex: `11 00000015  ${ID_HEX} 0000000000001000 01 0018 0050`,
    frame: { type: 'attach', id: ID, fromOffset: 4096n, role: 1, rows: 24, cols: 80 },
  },
  {
    name: 'ATTACH to observe from now',
    direction: 'to-server',
    hex: `11 00000015  ${ID_HEX} ffffffffffffffff 02 0018 0050`,
    frame: { type: 'attach', id: ID, fromOffset: Limits.FROM_NOW, role: 2, rows: 24, cols: 80 },
  },
  {
    name: 'ATTACHED as controller of generation 2',
    direction: 'to-client',
    hex: `12 00000034  ${ID_HEX} 01 00000002 0000000000000400 0000000000002400 00001093 00001092 ${UNIT_HEX}`,
    frame: { type: 'attached', id: ID, role: 1, generation: 2, oldest: 0x400n, next: 0x2400n, programPid: 4243, mainPid: 4242, unit: 'pty-7.service' },
  },
  {
    name: 'TRUNCATED: 1024 bytes asked for are gone',
    direction: 'to-client',
    hex: '13 00000010  0000000000000400 0000000000000400',
    frame: { type: 'truncated', oldest: 0x400n, dropped: 0x400n },
  },
  {
    name: 'CONTROLLER_CHANGED: generation 3, now an observer',
    direction: 'to-client',
    hex: '14 00000005  00000003 02',
    frame: { type: 'controller-changed', generation: 3, role: 2 },
  },
  { name: 'STOP_SESSION', direction: 'to-server', hex: `15 00000008  ${ID_HEX}`, frame: { type: 'stop-session', id: ID } },
];

for (const fixture of V3_FIXTURES) {
  test(`version 3 decodes ${fixture.name}, split at every offset, and encodes the same bytes`, () => {
    const wire = bytes(fixture.hex);
    for (let cut = 0; cut <= wire.length; cut++) {
      const decoder = new FrameDecoder(fixture.direction, 3);
      const frames = [...decoder.push(wire.subarray(0, cut)), ...decoder.push(wire.subarray(cut))];
      assert.equal(plain(frames), plain([fixture.frame]), `cut at ${cut}`);
    }
    assert.is(encodeFrame(fixture.frame, 3).toString('hex'), wire.toString('hex'));
  });
}

test('versions 1 and 2 know none of the version 3 frames; START and STARTED keep their version 2 layouts there', () => {
  for (const type of [FrameType.LIST, FrameType.SESSIONS, FrameType.ATTACH, FrameType.ATTACHED, FrameType.TRUNCATED, FrameType.CONTROLLER_CHANGED, FrameType.STOP_SESSION]) {
    assert.is(layoutOf(type, 1), undefined);
    assert.is(layoutOf(type, 2), undefined);
    assert.ok(layoutOf(type, 3));
  }
  throwsCode(() => new FrameDecoder('to-server', 2).push(bytes('0f 00000000')), 'UNKNOWN_TYPE');
  throwsCode(() => encodeFrame({ type: 'list' }, 2), 'UNKNOWN_TYPE');
  // A version 2 STARTED (no session id) is too short for version 3; a version 3 one has 8 bytes too many for version 2.
  throwsCode(() => new FrameDecoder('to-client', 3).push(bytes(`04 00000019 00001093 00001092 ${UNIT_HEX} 0000`)), 'BAD_LENGTH');
  throwsCode(() => new FrameDecoder('to-client', 2).push(bytes(V3_FIXTURES[1]!.hex)), 'BAD_LENGTH');
  // A version 2 START lacks the keep fields: its header is below version 3's least.
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes('03 0000001e 0018 0050 0000000000000001 0000000000000002 0001 0000 00000002 7368')), 'BAD_LENGTH');
  const { keepMs, retainBytes, label, ...v2 } = V3_FIXTURES[0]!.frame as Extract<Frame, { type: 'start' }>;
  assert.equal([keepMs, retainBytes, label], [600_000, 0, 'build']);
  assert.is(encodeFrame(V3_FIXTURES[0]!.frame, 2).toString('hex'), encodeFrame(v2, 2).toString('hex'), 'version 2 leaves the keep fields out');
});

test('directions: requests travel to the server, answers to the client', () => {
  throwsCode(() => new FrameDecoder('to-client', 3).push(bytes('0f 00000000')), 'WRONG_DIRECTION');
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes('10 00000002 0000')), 'WRONG_DIRECTION');
  throwsCode(() => new FrameDecoder('to-client', 3).push(bytes(V3_FIXTURES[5]!.hex)), 'WRONG_DIRECTION');
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes(V3_FIXTURES[8]!.hex)), 'WRONG_DIRECTION');
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes('14 00000005 00000003 02')), 'WRONG_DIRECTION');
  throwsCode(() => new FrameDecoder('to-client', 3).push(bytes(V3_FIXTURES[10]!.hex)), 'WRONG_DIRECTION');
  // Lengths are judged on the header alone.
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes('11 00000014')), 'BAD_LENGTH');
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes('0f 00000001')), 'BAD_LENGTH');
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes('15 00000009')), 'BAD_LENGTH');
  throwsCode(() => new FrameDecoder('to-client', 3).push(bytes('10 00010001')), 'OVERSIZE');
  throwsCode(() => new FrameDecoder('to-client', 3).push(bytes('13 00000011')), 'BAD_LENGTH');
});

test('START v3 keep fields: each violation is BAD_START', () => {
  const start = (keep: string) =>
    frameHex(FrameType.START, `0018 0050 0000000000000001 0000000000000002 0001 0000 00000002 7368 ${keep}`);
  const cases: [string, string][] = [
    [start(`00000000 00001000 0000`), 'BAD_VALUE'], // a ring for a session that is not kept
    [start(`000927c0 00000fff 0000`), 'BAD_VALUE'], // below 4096
    [start(`000927c0 ${be.u32(Limits.MAX_RETAINED_BYTES + 1)} 0000`), 'BAD_VALUE'],
    [start(`000927c0 00000000 0101 ${'61'.repeat(257)}`), 'OVERSIZE'],
    [start(`000927c0 00000000 0003 610a62`), 'BAD_VALUE'], // a newline
    [start(`000927c0 00000000 0003 61c29b`), 'BAD_VALUE'], // U+009B, a C1 control (CSI)
    [start(`000927c0 00000000 0002 61ff`), 'BAD_UTF8'],
    [start(`000927c0 00000000 0005 6162`), 'BAD_LENGTH'], // label beyond the payload
    [start(`000927c0 00000000 0001 61 00`), 'BAD_LENGTH'], // a byte left over
  ];
  for (const [hex, code] of cases) throwsCode(() => new FrameDecoder('to-server', 3).push(bytes(hex)), code as never, ErrorCode.BAD_START);
  // The limits themselves are accepted: the largest ring, the longest label, a label of plain Unicode.
  const [frame] = new FrameDecoder('to-server', 3).push(bytes(start(`ffffffff ${be.u32(Limits.MAX_RETAINED_BYTES)} 0100 ${'61'.repeat(256)}`)));
  assert.equal([(frame as { keepMs: number }).keepMs, (frame as { label: string }).label.length], [0xffff_ffff, 256]);
  const [accented] = new FrameDecoder('to-server', 3).push(bytes(start(`00000001 00001000 ${text('dév ✓')}`)));
  assert.is((accented as { label: string }).label, 'dév ✓');
});

test('ATTACH fields: an offset at or above 2^63 is BAD_OFFSET; id, role and size are checked', () => {
  const attach = (id: string, from: string, role: string, size = '0018 0050') => frameHex(FrameType.ATTACH, `${id} ${from} ${role} ${size}`);
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes(attach(ID_HEX, '8000000000000000', '01'))), 'BAD_VALUE', ErrorCode.BAD_OFFSET);
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes(attach(ID_HEX, 'fffffffffffffffe', '02'))), 'BAD_VALUE', ErrorCode.BAD_OFFSET);
  const [edge] = new FrameDecoder('to-server', 3).push(bytes(attach(ID_HEX, '7fffffffffffffff', '02')));
  assert.is((edge as { fromOffset: bigint }).fromOffset, (1n << 63n) - 1n);
  const cases: [string, string][] = [
    [attach('0000000000000000', '0000000000000000', '01'), 'BAD_VALUE'], // id 0
    [attach(be.u64(1n << 53n), '0000000000000000', '01'), 'BAD_VALUE'], // id beyond 2^53-1
    [attach(ID_HEX, '0000000000000000', '00'), 'BAD_VALUE'],
    [attach(ID_HEX, '0000000000000000', '03'), 'BAD_VALUE'],
    [attach(ID_HEX, '0000000000000000', '02', '0000 0050'), 'BAD_VALUE'], // observe still names a real size
  ];
  for (const [hex, code] of cases) throwsCode(() => new FrameDecoder('to-server', 3).push(bytes(hex)), code as never, ErrorCode.PROTOCOL);
  throwsCode(() => new FrameDecoder('to-server', 3).push(bytes(frameHex(FrameType.STOP_SESSION, '0000000000000000'))), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'attach', id: ID, fromOffset: 1n << 63n, role: 1, rows: 24, cols: 80 }, 3), 'BAD_VALUE', ErrorCode.BAD_OFFSET);
  throwsCode(() => encodeFrame({ type: 'attach', id: 2 ** 53, fromOffset: 0n, role: 1, rows: 24, cols: 80 }, 3), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'attach', id: ID, fromOffset: 0n, role: 3 as never, rows: 24, cols: 80 }, 3), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'stop-session', id: 1.5 }, 3), 'BAD_VALUE');
});

test('answers are checked: STARTED id, ATTACHED offsets and generation, TRUNCATED, CONTROLLER_CHANGED', () => {
  const started = (id: string) => frameHex(FrameType.STARTED, `00001093 00001092 ${UNIT_HEX} 0000 ${id}`);
  const attached = (generation: string, oldest: string, next: string) =>
    frameHex(FrameType.ATTACHED, `${ID_HEX} 01 ${generation} ${oldest} ${next} 00001093 00001092 ${UNIT_HEX}`);
  const cases: [string, string][] = [
    [started('0000000000000000'), 'BAD_VALUE'],
    [started(be.u64(1n << 53n)), 'BAD_VALUE'],
    [attached('00000000', be.u64(0n), be.u64(0n)), 'BAD_VALUE'], // generation 0
    [attached('00000001', be.u64(2n), be.u64(1n)), 'BAD_VALUE'], // oldest past next
    [attached('00000001', be.u64(0n), be.u64(1n << 63n)), 'BAD_VALUE'],
    [frameHex(FrameType.ATTACHED, `${ID_HEX} 01 00000001 ${be.u64(0n)} ${be.u64(0n)} 00000000 00001092 ${UNIT_HEX}`), 'BAD_VALUE'], // pid 0
    [frameHex(FrameType.ATTACHED, `${ID_HEX} 01 00000001 ${be.u64(0n)} ${be.u64(0n)} 00001093 00001092 000e ${UNIT_HEX.slice(5)}`), 'BAD_LENGTH'],
    [frameHex(FrameType.TRUNCATED, `${be.u64(0x400n)} ${be.u64(0n)}`), 'BAD_VALUE'], // nothing dropped
    [frameHex(FrameType.TRUNCATED, `${be.u64(0x400n)} ${be.u64(0x401n)}`), 'BAD_VALUE'], // more than before oldest
    [frameHex(FrameType.CONTROLLER_CHANGED, '00000000 01'), 'BAD_VALUE'],
    [frameHex(FrameType.CONTROLLER_CHANGED, '00000002 03'), 'BAD_VALUE'],
  ];
  for (const [hex, code] of cases) throwsCode(() => new FrameDecoder('to-client', 3).push(bytes(hex)), code as never);
  throwsCode(() => encodeFrame({ type: 'started', programPid: 2, mainPid: 1, unit: 'a.service', droppedEnv: [] }, 3), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'truncated', oldest: 5n, dropped: 6n }, 3), 'BAD_VALUE');
});

test('SESSIONS entries are checked field by field, and the count must match the payload', () => {
  const one = (entry: string) => frameHex(FrameType.SESSIONS, `0001 ${entry}`);
  const swap = (from: number, hex: string) => {
    const flat = ENTRY_HEX.replace(/\s+/g, '');
    return flat.slice(0, from * 2) + hex.replace(/\s+/g, '') + flat.slice(from * 2 + hex.replace(/\s+/g, '').length);
  };
  // Byte offsets in an entry: state 8, controllers 9, startedAtMs 23, oldest 43, fresh 59, endCode 60, origin 65, labelLen 66.
  assert.equal(plain(new FrameDecoder('to-client', 3).push(bytes(one(swap(0, ID_HEX))))), [{ type: 'sessions', sessions: [ENTRY] }]);
  const cases: [string, string][] = [
    [frameHex(FrameType.SESSIONS, `0002 ${ENTRY_HEX}`), 'BAD_LENGTH'], // count beyond the payload
    [frameHex(FrameType.SESSIONS, `0001 ${ENTRY_HEX} 00`), 'BAD_LENGTH'],
    [frameHex(FrameType.SESSIONS, `0002 ${ENTRY_HEX} ${ENTRY_HEX}`), 'BAD_VALUE'], // an id twice
    [one(swap(8, '07')), 'BAD_VALUE'], // state 7
    [one(swap(9, '02')), 'BAD_VALUE'], // two controllers
    [one(swap(23, be.u64(1n << 53n))), 'BAD_VALUE'], // startedAtMs beyond 2^53-1
    [one(swap(43, be.u64(0x2500n))), 'BAD_VALUE'], // oldest past next
    [one(swap(59, '02')), 'BAD_VALUE'], // fresh 2
    [one(swap(60, '05')), 'BAD_VALUE'], // endCode 5
    [one(swap(65, '00')), 'BAD_VALUE'], // origin 0
    [one(swap(65, '04')), 'BAD_VALUE'], // origin 4
    [one(swap(66, '0101')), 'OVERSIZE'], // a label of 257 bytes
  ];
  for (const [hex, code] of cases) throwsCode(() => new FrameDecoder('to-client', 3).push(bytes(hex)), code as never);
  throwsCode(() => encodeFrame({ type: 'sessions', sessions: [{ ...ENTRY, program: 'x'.repeat(257) }] }, 3), 'OVERSIZE');
  throwsCode(() => encodeFrame({ type: 'sessions', sessions: [{ ...ENTRY, label: 'a\tb' }] }, 3), 'BAD_VALUE');
});

test('sessionsFrame cuts program and cwd at a character boundary and leaves out what would not fit 64 KiB', () => {
  const long = { ...ENTRY, program: `${'x'.repeat(255)}é`, cwd: `/${'é'.repeat(600)}`, label: 'l'.repeat(256) };
  const frame = sessionsFrame([long]);
  assert.is(frame.sessions[0]!.program, 'x'.repeat(255), 'é would straddle byte 256');
  assert.is(Buffer.byteLength(frame.sessions[0]!.cwd), 1023);
  const many = Array.from({ length: 50 }, (_, i) => ({ ...long, id: i + 1 }));
  const fitted = sessionsFrame(many);
  const wire = encodeFrame(fitted, 3);
  assert.ok(wire.length - 5 <= Limits.MAX_FRAME_PAYLOAD);
  assert.ok(fitted.sessions.length >= 40 && fitted.sessions.length < 50, `${fitted.sessions.length} of 50 fit`);
  const [decoded] = new FrameDecoder('to-client', 3).push(wire);
  assert.is((decoded as { sessions: SessionEntry[] }).sessions.length, fitted.sessions.length, 'the count says how many are in');
});

test('sessionsFrame leaves out an entry the codec refuses, and tells of it, rather than fail the whole LIST', () => {
  const refused: string[] = [];
  const bad = [{ ...ENTRY, id: 2, label: 'a\u0001b' }, { ...ENTRY, id: 3, label: 'x\ud800' }, { ...ENTRY, id: 4, label: '\u00e9'.repeat(200) }];
  const frame = sessionsFrame([bad[0]!, ENTRY, ...bad.slice(1)], (entry, error) => void refused.push(`${entry.id}: ${error.message}`));
  assert.equal(frame.sessions.map((entry) => entry.id), [ENTRY.id]);
  assert.equal(refused.length, 3, refused.join('\n'));
  assert.match(refused[0]!, /^2: label holds a control character/);
  encodeFrame(frame, 3);
});

test('property: version 3 frames from arbitrary bytes in arbitrary chunks throw nothing but ProtocolError', () => {
  // Biased towards version 3's type bytes and lengths around their layouts, so every parser is reached.
  const header = fc.tuple(fc.integer({ min: 0x03, max: 0x16 }), fc.integer({ min: 0, max: 140 })).map(([type, length]) => Buffer.from([type, 0, 0, 0, length]));
  const piece = fc.oneof(fc.uint8Array({ maxLength: 96 }).map((b) => Buffer.from(b)), header);
  for (const direction of ['to-server', 'to-client'] as const) {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1 }), (pieces, sizes) => {
        const stream = Buffer.concat(pieces);
        const decoder = new FrameDecoder(direction, 3);
        let offset = 0;
        try {
          for (let i = 0; offset < stream.length; i++) {
            decoder.push(stream.subarray(offset, offset + sizes[i % sizes.length]!));
            offset += sizes[i % sizes.length]!;
          }
        } catch (error) {
          if (!(error instanceof ProtocolError)) throw error;
        }
      }),
      { numRuns: 3000 },
    );
  }
});

test('property: any valid SESSIONS entry, ATTACH and ATTACHED encode and decode to themselves', () => {
  const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
  const size = fc.integer({ min: 1, max: 0xffff });
  const id = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
  const offsets = fc.tuple(fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }), fc.bigInt({ min: 0n, max: (1n << 63n) - 1n })).map(([a, b]) => (a <= b ? [a, b] : [b, a]) as [bigint, bigint]);
  const label = fc.string({ maxLength: 60 }).map((text) => text.replace(/[\u0000-\u001f\u007f-\u009f]/gu, '').replace(/\p{Cs}/gu, ''));
  const entry = fc.record({
    id, state: fc.integer({ min: 1, max: 6 }), controllers: fc.integer({ min: 0, max: 1 }), observers: fc.integer({ min: 0, max: 255 }),
    rows: size, cols: size, programPid: u32, mainPid: u32, startedAtMs: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), keepMs: u32,
    deadlineMs: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), offsets, fresh: fc.boolean(), end: fc.integer({ min: 0, max: 3 }),
    endStatus: fc.integer({ min: -0x8000_0000, max: 0x7fff_ffff }), origin: fc.integer({ min: 1, max: 3 }), label, program: label, cwd: fc.string({ maxLength: 300 }).map((t) => t.replace(/\p{Cs}/gu, '')),
  }).map(({ offsets: [oldest, next], end, ...rest }) => ({ ...rest, oldest, next, endCode: end }) as SessionEntry);
  fc.assert(
    fc.property(fc.array(entry, { maxLength: 5 }), (entries) => {
      const unique = [...new Map(entries.map((one) => [one.id, one])).values()];
      const frame = sessionsFrame(unique);
      assert.equal(new FrameDecoder('to-client', 3).push(encodeFrame(frame, 3)), [frame]);
    }),
  );
  fc.assert(
    fc.property(id, fc.oneof(fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }), fc.constant(Limits.FROM_NOW)), fc.integer({ min: 1, max: 2 }), size, size, (sid, fromOffset, role, rows, cols) => {
      const frame = { type: 'attach' as const, id: sid, fromOffset, role: role as 1 | 2, rows, cols };
      assert.equal(new FrameDecoder('to-server', 3).push(encodeFrame(frame, 3)), [frame]);
    }),
  );
});

/** The byte examples of docs/protocol.md's "Version 3": fenced blocks and inline `TT LLLLLLLL …` spans. */
function docExamples(): string[] {
  const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Version 3'), doc.indexOf('## Version 4'));
  const blocks = [...section.matchAll(/```\n([\s\S]*?)```/g)].map((m) => m[1]!.split('\n').map(docHex).join('')).filter((hex) => /^[0-9a-f]{10}/.test(hex));
  const inline = [...section.matchAll(/`([0-9a-f]{2} [0-9a-f]{8}(?: +[0-9a-f]+)*)`/g)].map((m) => m[1]!.replace(/\s+/g, ''));
  return [...blocks, ...inline];
}

test("docs/protocol.md's version 3 examples are each one whole frame a version 3 decoder accepts", () => {
  const examples = docExamples();
  assert.ok(examples.length >= 13, `${examples.length} examples found`);
  const toServer = new Set([FrameType.HELLO, FrameType.START, FrameType.LIST, FrameType.ATTACH, FrameType.STOP_SESSION]);
  for (const hex of examples) {
    const wire = bytes(hex);
    const decoder = new FrameDecoder(toServer.has(wire[0]! as never) ? 'to-server' : 'to-client', 3);
    const frames = decoder.push(wire);
    assert.is(frames.length, 1, hex);
    assert.ok(decoder.atBoundary, `${hex}: the header's length is the payload's`);
  }
  const hexes = examples.join(' ');
  for (const fixture of V3_FIXTURES.slice(1)) assert.ok(hexes.includes(bytes(fixture.hex).toString('hex')), `the doc shows ${fixture.name}`);
});

test.run();
