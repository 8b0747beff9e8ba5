// Version 2 of the codec: hand-written bytes for every frame it changes or adds, split at every offset; version 1
// keeps its layouts and does not know END_INPUT; each v2 field is checked as strictly as v1's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FrameType, Limits } from '../../src/protocol/constants.ts';
import { FrameDecoder } from '../../src/protocol/decode.ts';
import { encodeFrame } from '../../src/protocol/encode.ts';
import type { Accounting, Direction, Frame } from '../../src/protocol/frames.ts';
import { layoutOf } from '../../src/protocol/layout.ts';
import { be, bytes, frameHex } from './fixtures.ts';
import { plain, throwsCode } from './helpers.ts';

const ACCOUNTING: Accounting = {
  cpuUsageNsec: 12_500_000,
  memoryBytes: 4_194_304,
  ioReadBytes: null,
  ioWriteBytes: null,
  tasks: 3,
  inputBytes: 6,
  outputBytes: 120,
  durationUsec: 1_500_000,
};
const UNAVAILABLE = 'ffffffffffffffff';
const ACCOUNTING_HEX = [
  be.u64(12_500_000n), be.u64(4_194_304n), UNAVAILABLE, UNAVAILABLE, be.u64(3n), be.u64(6n), be.u64(120n), be.u64(1_500_000n),
].join(' ');

/** The bytes as docs/protocol.md shows them, written by hand. */
const V2_FIXTURES: { name: string; direction: Direction; hex: string; frame: Frame }[] = [
  {
    name: 'STARTED with the program pid and two dropped names',
    direction: 'to-client',
    hex: '04 00000038  00001093 00001092 000d 7074792d372e73657276696365 0002 0000000a 4c495354454e5f464453 0000000d 4e4f544946595f534f434b4554',
    frame: { type: 'started', programPid: 4243, mainPid: 4242, unit: 'pty-7.service', droppedEnv: ['LISTEN_FDS', 'NOTIFY_SOCKET'] },
  },
  {
    name: 'EXIT with status 7 and the end record',
    direction: 'to-client',
    hex: `0b 00000052  01 00000007 ${ACCOUNTING_HEX} 00000009 657869742d636f6465`,
    frame: { type: 'exit', code: 1, status: 7, result: 'exit-code', accounting: ACCOUNTING },
  },
  {
    name: 'STOPPED with the program killed by SIGHUP and the end record',
    direction: 'to-client',
    hex: `0a 00000050  02 00000001 ${ACCOUNTING_HEX} 00000007 73756363657373`,
    frame: { type: 'stopped', end: { code: 2, status: 1, result: 'success', accounting: ACCOUNTING } },
  },
  { name: 'END_INPUT', direction: 'to-server', hex: '0e 00000000', frame: { type: 'end-input' } },
];

for (const fixture of V2_FIXTURES) {
  test(`version 2 decodes ${fixture.name}, split at every offset, and encodes the same bytes`, () => {
    const wire = bytes(fixture.hex);
    for (let cut = 0; cut <= wire.length; cut++) {
      const decoder = new FrameDecoder(fixture.direction, 2);
      const frames = [...decoder.push(wire.subarray(0, cut)), ...decoder.push(wire.subarray(cut))];
      assert.equal(plain(frames), plain([fixture.frame]), `cut at ${cut}`);
    }
    assert.is(encodeFrame(fixture.frame, 2).toString('hex'), wire.toString('hex'));
  });
}

test('version 1 keeps its layouts: END_INPUT is unknown, STARTED/STOPPED/EXIT are the short forms', () => {
  throwsCode(() => new FrameDecoder('to-server').push(bytes('0e 00000000')), 'UNKNOWN_TYPE');
  throwsCode(() => encodeFrame({ type: 'end-input' }), 'UNKNOWN_TYPE');
  assert.is(layoutOf(FrameType.END_INPUT, 1), undefined);
  assert.is(layoutOf(FrameType.END_INPUT, 2)?.name, 'end-input');
  // A version 1 STARTED is too short for version 2, and a v2 one too long for v1.
  throwsCode(() => new FrameDecoder('to-client', 2).push(bytes('04 00000011  00001092 7074792d372e73657276696365')), 'BAD_LENGTH');
  throwsCode(() => new FrameDecoder('to-client', 1).push(bytes('0a 00000000')).concat(new FrameDecoder('to-client', 1).push(bytes(V2_FIXTURES[2]!.hex))), 'BAD_LENGTH');
  assert.equal(plain(new FrameDecoder('to-client', 2).push(bytes('02 00000002 0002'))), [{ type: 'welcome', version: 2 }], 'WELCOME is the same in every version');
});

test('a decoder switches version at WELCOME: frames after it follow the agreed layout', () => {
  const decoder = new FrameDecoder('to-client');
  assert.equal(plain(decoder.push(bytes('02 00000002 0002'))), [{ type: 'welcome', version: 2 }]);
  decoder.version = 2;
  assert.equal(plain(decoder.push(bytes(V2_FIXTURES[0]!.hex))), plain([V2_FIXTURES[0]!.frame]));
});

test('version 2 fields are checked: pids, unit, dropped names, figures, result', () => {
  const started = (fields: string) => frameHex(FrameType.STARTED, fields);
  const unit = `000d ${Buffer.from('pty-7.service').toString('hex')}`;
  const cases: [string, string][] = [
    [started(`00000000 00001092 ${unit} 0000`), 'BAD_VALUE'], // programPid 0
    [started(`00001093 00000000 ${unit} 0000`), 'BAD_VALUE'], // mainPid 0
    [started(`00001093 00001092 0003 612062 0000`), 'BAD_VALUE'], // unit "a b"
    [started(`00001093 00001092 ${unit} 0001 ${be.str('A=B')}`), 'BAD_VALUE'], // not a name
    [started(`00001093 00001092 ${unit} 0002 ${be.str('A')} ${be.str('A')}`), 'BAD_VALUE'], // twice
    [started(`00001093 00001092 ${unit} 0002 ${be.str('A')}`), 'BAD_LENGTH'], // count beyond the payload
    [started(`00001093 00001092 ${unit} 0000 00`), 'BAD_LENGTH'], // a byte left over
    [started(`00001093 00001092 ${unit} ${be.u16(Limits.MAX_ENVC + 1)}`), 'BAD_VALUE'],
    [frameHex(FrameType.EXIT, `01 00000007 ${be.u64(1n << 60n)} ${'00'.repeat(56)} 00000001 78`), 'BAD_VALUE'], // beyond 2^53
    [frameHex(FrameType.EXIT, `04 00000007 ${'00'.repeat(64)} 00000001 78`), 'BAD_VALUE'], // code 4
    [frameHex(FrameType.STOPPED, `01 00000007 ${'00'.repeat(64)} 00000002 7820`), 'BAD_VALUE'], // result "x "
  ];
  for (const [hex, code] of cases) throwsCode(() => new FrameDecoder('to-client', 2).push(bytes(hex)), code as never);
});

test('the encoder refuses what a version 2 decoder would: missing fields, bad figures', () => {
  throwsCode(() => encodeFrame({ type: 'started', mainPid: 1, unit: 'a.service' }, 2), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'stopped' }, 2), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'exit', code: 1, status: 0, result: 'success' }, 2), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'exit', code: 1, status: 0, result: 'success', accounting: { ...ACCOUNTING, tasks: -1 } }, 2), 'BAD_VALUE');
  throwsCode(() => encodeFrame({ type: 'started', programPid: 2, mainPid: 1, unit: 'a.service', droppedEnv: ['A', 'A'] }, 2), 'BAD_VALUE');
  // Version 1 encodes STARTED without the v2 fields, whatever the frame holds.
  assert.is(encodeFrame({ type: 'started', programPid: 2, mainPid: 4242, unit: 'pty-7.service', droppedEnv: [] }).toString('hex'), bytes('04 00000011 00001092 7074792d372e73657276696365').toString('hex'));
});

test.run();
