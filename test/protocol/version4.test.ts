// Version 4 of the codec (profiles, network, budgets): START's new fields as hand-written bytes, split at
// every offset; every bad value refused with its own ERROR code; older versions' START unchanged.
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { FrameDecoder } from '../../src/protocol/decode.ts';
import { encodeFrame } from '../../src/protocol/encode.ts';
import type { Frame, FrameOf } from '../../src/protocol/frames.ts';
import { layoutOf } from '../../src/protocol/layout.ts';
import { bytes, frameHex } from './fixtures.ts';
import { plain, throwsCode } from './helpers.ts';
import { ProtocolError } from '../../src/protocol/errors.ts';

/** Version 3's START of `sh` in 24×80 with dev 1, ino 2, not kept, no label. */
const V3_BODY = '0018 0050 0000000000000001 0000000000000002 0001 0000 00000002 7368  00000000 00000000 0000';
const BASE: FrameOf<'start'> = { type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], keepMs: 0, retainBytes: 0, label: '' };
const NO_BUDGETS = '0000000000000000 0000000000000000 0000000000000000 0000000000000000';

const hex = (sandbox: string) => frameHex(0x03, `${V3_BODY} ${sandbox}`);

function decode(frameHexText: string): Frame[] {
  const decoder = new FrameDecoder('to-server', 4);
  return decoder.push(bytes(frameHexText));
}

const FIXTURES: { name: string; sandbox: string; frame: FrameOf<'start'> }[] = [
  { name: 'nothing asked (the floor, the default network, no budgets)', sandbox: `00 00 00 ${NO_BUDGETS}`, frame: { ...BASE, profile: '', budgets: {} } },
  {
    name: 'workspace, network off, 10 minutes, 1 GiB, 64 tasks, 50 % CPU',
    sandbox: `09 ${Buffer.from('workspace').toString('hex')} 01 0f 00000000000927c0 0000000040000000 0000000000000040 0000000000000032`,
    frame: { ...BASE, profile: 'workspace', network: 'off', budgets: { timeMs: 600_000, memoryBytes: 1 << 30, tasks: 64, cpuPercent: 50 } },
  },
  {
    name: 'hardened, host loopback, memory alone',
    sandbox: `08 ${Buffer.from('hardened').toString('hex')} 02 02 0000000000000000 0000000004000000 0000000000000000 0000000000000000`,
    frame: { ...BASE, profile: 'hardened', network: 'host-loopback', budgets: { memoryBytes: 64 << 20 } },
  },
  { name: 'network on', sandbox: `00 03 00 ${NO_BUDGETS}`, frame: { ...BASE, profile: '', network: 'on', budgets: {} } },
];

for (const fixture of FIXTURES) {
  test(`START v4: ${fixture.name}: decoded split at every offset, and encoded to the same bytes`, () => {
    const wire = bytes(hex(fixture.sandbox));
    for (let cut = 0; cut <= wire.length; cut++) {
      const decoder = new FrameDecoder('to-server', 4);
      const frames = [...decoder.push(wire.subarray(0, cut)), ...decoder.push(wire.subarray(cut))];
      assert.equal(plain(frames), plain([fixture.frame]), `cut at ${cut}`);
    }
    assert.is(encodeFrame(fixture.frame, 4).toString('hex'), wire.toString('hex'));
  });
}

test('START v4 is at least version 3\'s minimum plus 35 bytes; a version 3 START is short in version 4', () => {
  assert.is(layoutOf(0x03, 4)!.min, layoutOf(0x03, 3)!.min + 35);
  // Judged on its header, as every START shorter than its layout: PROTOCOL (docs/protocol.md "START").
  throwsCode(() => decode(frameHex(0x03, V3_BODY)), 'BAD_LENGTH', ErrorCode.PROTOCOL);
});

test('versions 1..3 keep their START: the new fields are neither read nor written', () => {
  const asked = { ...BASE, profile: 'hardened', network: 'off' as const, budgets: { tasks: 5 } };
  assert.is(encodeFrame(asked, 3).toString('hex'), encodeFrame(BASE, 3).toString('hex'));
  const frames = new FrameDecoder('to-server', 3).push(encodeFrame(BASE, 3));
  assert.not.ok('profile' in frames[0]! || 'budgets' in frames[0]!);
});

// The bad input, byte for byte: each refused with the code the client branches on.
const BAD: { name: string; sandbox: string; code: number }[] = [
  { name: 'a profile name with a capital', sandbox: `07 ${Buffer.from('Default').toString('hex')} 00 00 ${NO_BUDGETS}`, code: ErrorCode.PROFILE },
  { name: 'a profile name with a newline', sandbox: `02 610a 00 00 ${NO_BUDGETS}`, code: ErrorCode.PROFILE },
  { name: 'a profile name of 33 bytes', sandbox: `21 ${'61'.repeat(33)} 00 00 ${NO_BUDGETS}`, code: ErrorCode.PROFILE },
  { name: 'network 4', sandbox: `00 04 00 ${NO_BUDGETS}`, code: ErrorCode.NETWORK },
  { name: 'network 255', sandbox: `00 ff 00 ${NO_BUDGETS}`, code: ErrorCode.NETWORK },
  { name: 'a budget flag that names nothing', sandbox: `00 00 10 ${NO_BUDGETS}`, code: ErrorCode.BUDGET },
  { name: 'a budget of 0', sandbox: `00 00 01 ${NO_BUDGETS}`, code: ErrorCode.BUDGET },
  { name: 'a budget of 2^64-1', sandbox: `00 00 02 0000000000000000 ffffffffffffffff 0000000000000000 0000000000000000`, code: ErrorCode.BUDGET },
  { name: 'a budget of 2^53', sandbox: `00 00 04 0000000000000000 0000000000000000 0020000000000000 0000000000000000`, code: ErrorCode.BUDGET },
  { name: 'a budget without its flag', sandbox: `00 00 00 0000000000000000 0000000000000000 0000000000000000 0000000000000001`, code: ErrorCode.BUDGET },
  { name: 'a byte after the budgets', sandbox: `00 00 00 ${NO_BUDGETS} 00`, code: ErrorCode.BAD_START },
];

for (const bad of BAD) {
  test(`START v4 refuses ${bad.name} (ERROR ${bad.code})`, () => {
    let caught: unknown;
    try {
      decode(hex(bad.sandbox));
    } catch (error) {
      caught = error;
    }
    assert.is((caught as { wireCode?: number })?.wireCode, bad.code, String(caught));
  });
}

test('the encoder refuses what the decoder would: 0, negative, fractional, 2^64 budgets; unknown modes; bad names', () => {
  const cases: [Partial<FrameOf<'start'>>, number][] = [
    [{ budgets: { memoryBytes: 0 } }, ErrorCode.BUDGET],
    [{ budgets: { tasks: -1 } }, ErrorCode.BUDGET],
    [{ budgets: { cpuPercent: 0.5 } }, ErrorCode.BUDGET],
    [{ budgets: { timeMs: 2 ** 64 } }, ErrorCode.BUDGET],
    [{ budgets: { timeMs: Number.NaN } }, ErrorCode.BUDGET],
    [{ network: 'loopback' as never }, ErrorCode.NETWORK],
    [{ profile: 'work space' }, ErrorCode.PROFILE],
    [{ profile: 'x'.repeat(33) }, ErrorCode.PROFILE],
  ];
  for (const [fields, code] of cases) {
    let caught: unknown;
    try {
      encodeFrame({ ...BASE, ...fields }, 4);
    } catch (error) {
      caught = error;
    }
    assert.instance(caught, ProtocolError, JSON.stringify(fields));
    assert.is((caught as ProtocolError).wireCode, code, JSON.stringify(fields));
  }
});

test('docs/protocol.md\'s version 4 example decodes to what it says', () => {
  const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
  const after = doc.slice(doc.indexOf("Example: version 3's example START without keep"));
  const block = /```\n([\s\S]*?)```/.exec(after)![1]!;
  const hexText = block.split('\n').map((line) => line.replace(/".*$|[a-z][a-z ,:]+$/i, '').trim()).join(' ');
  const [frame] = new FrameDecoder('to-server', 4).push(bytes(hexText));
  assert.equal(plain([frame!]), plain([{ type: 'start', rows: 24, cols: 80, cwdDev: 0x803n, cwdIno: 0x1234n, argv: ['sh', '-i'], env: [{ name: 'TERM', value: 'xterm' }], keepMs: 0, retainBytes: 0, label: '', profile: 'hardened', network: 'off', budgets: { timeMs: 600_000, memoryBytes: 1 << 30 } }]));
});

test.run();
