// The session helper's C constants have one source with the TypeScript ones: this fails on any difference.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, FrameType, HEADER_SIZE, LATEST_VERSION, Limits } from '../../src/protocol/constants.ts';
import { layoutOf } from '../../src/protocol/layout.ts';
import { ALLOWED_SIGNALS, AttachRole, DetachReasonCode, EndReasonCode, FIGURE_NAMES, HELPER_DIALECT, HelperLimits, HelperMessageType } from '../../src/control/helper-channel.ts';
import { GENERATED } from './helper-sources.ts';
import { helperWireHeader } from '../../scripts/helper-wire.ts';

const header = (name: string) => readFileSync(fileURLToPath(new URL(`../../native/session/${name}`, import.meta.url)), 'utf8');

/** Every `NAME = value,` of the C enums in a header (decimal or hex, or a sum of such). */
function enums(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const match of text.matchAll(/^\s*([A-Z][A-Z0-9_]*)\s*=\s*([0-9a-fx +]+),/gm)) {
    const value = match[2]!.split('+').reduce((sum, term) => sum + Number(term.trim()), 0);
    found.set(match[1]!, value);
  }
  return found;
}

// The protocol's constants are generated from src/protocol/ (scripts/helper-wire.ts): this checks the generator.
const protocol = enums(readFileSync(`${GENERATED}wire.h`, 'utf8'));
const control = enums(header('control.h'));

test('frame types', () => {
  for (const [name, value] of Object.entries(FrameType)) assert.is(protocol.get(`FRAME_${name}`), value, name);
  assert.is([...protocol.keys()].filter((k) => k.startsWith('FRAME_')).length, Object.keys(FrameType).length);
});

test('limits and window sizes', () => {
  assert.is(protocol.get('HEADER_SIZE'), HEADER_SIZE);
  for (const name of ['MAX_FRAME_PAYLOAD', 'MAX_IO_PAYLOAD', 'MAX_UNIT_NAME', 'MAX_RESULT', 'INITIAL_WINDOW', 'MAX_WINDOW', 'MAX_SIGNAL'] as const) {
    assert.is(protocol.get(name), Limits[name], name);
  }
});

test('error codes', () => {
  for (const [name, value] of Object.entries(ErrorCode)) assert.is(protocol.get(`ERR_${name}`), value, name);
});

test('control channel: message types, end reasons, limits', () => {
  for (const [name, value] of Object.entries(HelperMessageType)) assert.is(control.get(`CONTROL_${name}`), value, name);
  for (const [name, value] of Object.entries(EndReasonCode)) assert.is(control.get(`END_${name.toUpperCase().replace('-', '_')}`), value, name);
  assert.is(control.get('CONTROL_HEADER_SIZE'), HelperLimits.HEADER_SIZE);
  for (const name of ['END_FIXED_SIZE', 'FIGURES_SIZE', 'MAX_REMAINDER', 'MAX_REPORT_TEXT', 'MAX_LOG_TEXT', 'MAX_LOGS', 'MAX_ENV_ENTRIES', 'MAX_ENV_PAYLOAD'] as const) {
    assert.is(control.get(name), HelperLimits[name], name);
  }
  for (const [name, value] of Object.entries(DetachReasonCode)) assert.is(control.get(`DETACH_${name.toUpperCase().replace('-', '_')}`), value, name);
  for (const [name, value] of Object.entries(AttachRole)) assert.is(control.get(`ROLE_${name.toUpperCase()}`), value, name);
  for (const name of ['ATTACH_SIZE', 'DETACHED_FIXED_SIZE', 'STATE_SIZE', 'PROGRAM_ENDED_SIZE', 'NO_CONTROLLER', 'MAX_LAUNCH_PAYLOAD', 'MAX_LAUNCH_ARGS'] as const) assert.is(control.get(name), HelperLimits[name], name);
  assert.is(HelperLimits.MAX_CONTROL_PAYLOAD, HelperLimits.END_FIXED_SIZE + HelperLimits.MAX_REMAINDER + HelperLimits.MAX_REPORT_TEXT);
  // The helper writes STARTED too (GO's payload): the rest of any of its frames fits a report.
  assert.is(HelperLimits.MAX_REMAINDER, HEADER_SIZE + Limits.MAX_FRAME_PAYLOAD);
  assert.is(HelperLimits.MAX_ENV_ENTRIES, Limits.MAX_ENVC + 1, "the client's entries and TERM");
  assert.is(HelperLimits.MAX_ENV_PAYLOAD, Limits.MAX_FRAME_PAYLOAD);
});

test('FIGURES: one u64 a figure, in the same order', () => {
  const cNames: Record<(typeof FIGURE_NAMES)[number], string> = {
    CPUUsageNSec: 'FIGURE_CPU_NSEC',
    MemoryPeak: 'FIGURE_MEMORY_PEAK',
    MemoryCurrent: 'FIGURE_MEMORY_CURRENT',
    TasksCurrent: 'FIGURE_TASKS',
    IOReadBytes: 'FIGURE_IO_READ',
    IOWriteBytes: 'FIGURE_IO_WRITE',
  };
  FIGURE_NAMES.forEach((name, index) => assert.is(control.get(cNames[name]), index, name));
  assert.is(control.get('FIGURE_COUNT'), FIGURE_NAMES.length);
  assert.is(HelperLimits.FIGURES_SIZE, 8 * FIGURE_NAMES.length);
});

test('allowed signals', () => {
  const list = /#define ALLOWED_SIGNALS \{([0-9, ]+)\}/.exec(header('control.h'))?.[1];
  assert.ok(list, 'ALLOWED_SIGNALS in control.h');
  assert.equal(list!.split(',').map(Number), [...ALLOWED_SIGNALS]);
});

test('the control channel\'s dialect and HELLO\'s size', () => {
  assert.is(/enum \{ CONTROL_DIALECT = (\d+) \}/.exec(header('control.h'))?.[1], String(HELPER_DIALECT));
  assert.is(control.get('HELLO_SIZE'), HelperLimits.HELLO_SIZE);
});

test('the rule tables: every type byte in every version as src/protocol/ lays it out (layoutOf)', () => {
  const text = readFileSync(`${GENERATED}wire.h`, 'utf8');
  const tables = [...text.matchAll(/\{ \/\/ version (\d+)\n([\s\S]*?)\n    \},/g)];
  assert.is(tables.length, LATEST_VERSION);
  for (const [, version, body] of tables) {
    const rows = new Map([...body!.matchAll(/\[0x([0-9a-f]{2})\] = \{true, (true|false), (\d+), (\d+)\}/g)].map((m) => [parseInt(m[1]!, 16), [m[2] === 'true', Number(m[3]), Number(m[4])]]));
    for (let type = 0; type < 256; type++) {
      const layout = layoutOf(type, Number(version));
      const row = rows.get(type);
      if (!layout) {
        assert.is(row, undefined, `version ${version} type ${type}`);
        continue;
      }
      assert.equal(row, [layout.direction !== 'to-client', layout.min, layout.max], `version ${version} type ${type}`);
    }
  }
});

// The decoder collects every payload a client sends but INPUT's in a buffer of HEADER_SIZE bytes: a
// frame added to src/protocol/ with a longer one must stop the build, not reach the helper's rules
// (it would be copied past that buffer, on the heap, by the client's bytes).
test('the generator refuses a client frame whose payload the helper cannot collect', () => {
  const longer = (type: number, version?: number) => {
    const layout = layoutOf(type, version);
    return type === FrameType.RESIZE && layout ? { ...layout, max: 64 } : layout;
  };
  assert.throws(() => helperWireHeader(longer), /RESIZE \(version 1\) may carry 64 bytes from a client/);
  const toClient = (type: number, version?: number) => {
    const layout = layoutOf(type, version);
    return type === FrameType.OUTPUT && layout ? { ...layout, max: 1 << 20 } : layout;
  };
  assert.not.throws(() => helperWireHeader(toClient), 'frames the helper only sends are not its decoder\'s');
  assert.ok(helperWireHeader().includes('[0x07] = {true, true, 4, 4}, // RESIZE'));
  // Version 3's requests come instead of START: refused on their header, so ATTACH's 21 bytes need no room.
  assert.ok(helperWireHeader().includes('[0x11] = {true, true, 21, 21}, // ATTACH'));
});

test.run();
