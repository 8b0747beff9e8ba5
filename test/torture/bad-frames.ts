// Bad frames: generated and mutated frame streams (fast-check) at the three places a peer's bytes
// are read: the broker's HELLO, the worker's START, and the data phase of a live session. Every case
// carries the answer docs/protocol.md gives for it; frames are built here from bytes, never with the
// codec under test.
import fc from 'fast-check';
import type { RawCase, RawResult } from '../support/agent-main.ts';
import type { TortureContext } from './report.ts';

const PROTOCOL = 1;
const VERSION = 2;
const BAD_START = 7;
const FLOW = 9;

/** What a case must get back. */
export type Expect =
  | { code: number }
  | { welcome: true }
  /** The session may start (a mutation that left START valid) or be refused with this code. */
  | { codeOrStarted: number }
  /** The peer hung up mid-frame: the session ends without a last frame. */
  | { closedQuietly: true }
  /** Version 3: the request is answered as asked, with no ERROR (SESSIONS, or ATTACHED then what follows). */
  | { answered: 'sessions' | 'attached' }
  /** Version 3: answered `answered` first, then exactly one ERROR with this code, last (an attached
   * connection's own fault: the session goes on). */
  | { answered: 'attached'; thenCode: number };

export interface FrameCase {
  where: 'hello' | 'start' | 'data' | 'kept';
  what: string;
  spec: RawCase;
  expect: Expect;
}

export function frame(type: number, payload: Buffer | number[] = []): Buffer {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

export function header(type: number, length: number): Buffer {
  const bytes = Buffer.alloc(5);
  bytes[0] = type;
  bytes.writeUInt32BE(length >>> 0, 1);
  return bytes;
}

export function hello(min = 1, max = 1, magic = 0x4f435054): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(magic >>> 0, 0);
  payload.writeUInt16BE(min, 4);
  payload.writeUInt16BE(max, 6);
  return frame(0x01, payload);
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

/** Client frames that are valid in the data phase and harmless to a `cat` session. */
const validDataFrame = fc.oneof(
  fc.string({ minLength: 1, maxLength: 16 }).map((text) => ({ name: 'INPUT', bytes: frame(0x05, Buffer.from(text.replace(/[\x00-\x1f\x7f]/g, 'x') || 'x')) })),
  fc.tuple(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 500 })).map(([rows, cols]) => ({ name: 'RESIZE', bytes: frame(0x07, [...u16(rows), ...u16(cols)]) })),
  fc.constant({ name: 'SIGNAL WINCH', bytes: frame(0x08, [28]) }),
  fc.integer({ min: 1, max: 4096 }).map((bytes) => ({ name: 'CREDIT', bytes: frame(0x0d, u32(bytes)) })),
);

/** One thing a client must not send in the data phase, with the code it earns. */
const badDataFrame: fc.Arbitrary<{ name: string; bytes: Buffer; expect: Expect }> = fc.oneof(
  fc.integer({ min: 0x0e, max: 0xff }).map((type) => ({ name: `unknown type ${type}`, bytes: frame(type, [1, 2, 3]), expect: { code: PROTOCOL } })),
  fc.constant({ name: 'type 0', bytes: frame(0x00), expect: { code: PROTOCOL } }),
  fc.constantFrom(0x02, 0x04, 0x06, 0x0a, 0x0b, 0x0c).map((type) => ({ name: `server-only type ${type}`, bytes: frame(type, [0, 1]), expect: { code: PROTOCOL } })),
  fc.constant({ name: 'a second HELLO', bytes: hello(), expect: { code: PROTOCOL } }),
  fc.constant({ name: 'a second START', bytes: startFrame(), expect: { code: PROTOCOL } }),
  fc.constant({ name: 'empty INPUT', bytes: frame(0x05), expect: { code: PROTOCOL } }),
  fc.integer({ min: 1, max: 8 }).map((n) => ({ name: 'non-empty STOP', bytes: frame(0x09, Buffer.alloc(n)), expect: { code: PROTOCOL } })),
  fc.integer({ min: 0, max: 9 }).filter((n) => n !== 4).map((n) => ({ name: `RESIZE of ${n} bytes`, bytes: frame(0x07, Buffer.alloc(n, 1)), expect: { code: PROTOCOL } })),
  fc.constant({ name: 'RESIZE to 0 rows', bytes: frame(0x07, [0, 0, 0, 80]), expect: { code: PROTOCOL } }),
  fc.constantFrom(0, 65, 99, 255).map((signal) => ({ name: `SIGNAL ${signal}`, bytes: frame(0x08, [signal]), expect: { code: PROTOCOL } })),
  fc.constantFrom(6, 11, 31).map((signal) => ({ name: `SIGNAL ${signal} (not allowed)`, bytes: frame(0x08, [signal]), expect: { code: PROTOCOL } })),
  fc.constant({ name: 'CREDIT of 2^32-1 (out of range)', bytes: frame(0x0d, u32(0xffffffff)), expect: { code: PROTOCOL } }),
  // Within range, but on top of the initial window it passes the 16 MiB the sender may hold.
  fc.constant({ name: 'CREDIT beyond the window', bytes: frame(0x0d, u32(16 * 1024 * 1024)), expect: { code: FLOW } }),
  fc.constant({ name: 'CREDIT of 0', bytes: frame(0x0d, u32(0)), expect: { code: PROTOCOL } }),
  fc.integer({ min: 32 * 1024 + 1, max: 0xffffffff }).map((length) => ({ name: `INPUT header of ${length} bytes`, bytes: header(0x05, length), expect: { code: PROTOCOL } })),
);

function startFrame(options: { rows?: number; dev?: bigint; ino?: bigint; argv?: string[] } = {}): Buffer {
  const argv = options.argv ?? ['sh', '-c', 'exec cat'];
  const parts: Buffer[] = [u16(options.rows ?? 24), u16(80)];
  const dev = Buffer.alloc(8);
  dev.writeBigUInt64BE(options.dev ?? 0n);
  const ino = Buffer.alloc(8);
  ino.writeBigUInt64BE(options.ino ?? 0n);
  parts.push(dev, ino, u16(argv.length), u16(0));
  for (const arg of argv) parts.push(u32(Buffer.byteLength(arg)), Buffer.from(arg));
  return frame(0x03, Buffer.concat(parts));
}

const hex = (bytes: Buffer) => bytes.toString('hex');

/** The broker's HELLO reader. */
function helloCases(runs: number, seed: number): FrameCase[] {
  const truncated = fc.integer({ min: 0, max: 12 }).map((at) => ({
    where: 'hello' as const,
    what: `HELLO cut at ${at} then EOF`,
    spec: { first: hex(hello().subarray(0, at)), halfClose: true, waitMs: 8000 },
    expect: { code: PROTOCOL },
  }));
  const otherType = fc.tuple(fc.integer({ min: 0, max: 255 }).filter((t) => t !== 1), fc.uint8Array({ maxLength: 16 })).map(([type, payload]) => ({
    where: 'hello' as const,
    what: `type ${type} first`,
    spec: { first: hex(frame(type, Buffer.from(payload))), halfClose: true },
    expect: { code: PROTOCOL },
  }));
  const wrongLength = fc.integer({ min: 0, max: 24 }).filter((n) => n !== 8).map((n) => ({
    where: 'hello' as const,
    what: `HELLO of ${n} bytes`,
    spec: { first: hex(frame(0x01, Buffer.alloc(n, 0x4f))), halfClose: true },
    expect: { code: PROTOCOL },
  }));
  const oversize = fc.integer({ min: 65 * 1024, max: 0xffffffff }).map((length) => ({
    where: 'hello' as const,
    what: `HELLO header claiming ${length} bytes`,
    spec: { first: hex(header(0x01, length)), halfClose: true },
    expect: { code: PROTOCOL },
  }));
  const magic = fc.integer({ min: 0, max: 0xffffffff }).filter((m) => m !== 0x4f435054).map((m) => ({
    where: 'hello' as const,
    what: `magic ${m.toString(16)}`,
    spec: { first: hex(hello(1, 1, m)), halfClose: true },
    expect: { code: PROTOCOL },
  }));
  const versions = fc.tuple(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0xffff })).map(([min, max]) => {
    // The supervisor speaks versions 1 to 3 (3 since kept sessions, issue 29): any range that meets 1..3 is welcomed.
    const expect: Expect = min === 0 || max < min ? { code: PROTOCOL } : min <= 3 && 1 <= max ? { welcome: true } : { code: VERSION };
    return { where: 'hello' as const, what: `versions ${min}..${max}`, spec: { first: hex(hello(min, max)), halfClose: true }, expect };
  });
  return fc.sample(fc.oneof(truncated, otherType, wrongLength, oversize, magic, versions), { numRuns: runs, seed });
}

/** The worker's START reader (after WELCOME). */
function startCases(runs: number, seed: number): FrameCase[] {
  const otherFrame = fc
    .constantFrom(
      { name: 'INPUT', bytes: frame(0x05, [0x61]) },
      { name: 'RESIZE', bytes: frame(0x07, [0, 24, 0, 80]) },
      { name: 'SIGNAL', bytes: frame(0x08, [2]) },
      { name: 'STOP', bytes: frame(0x09) },
      { name: 'CREDIT', bytes: frame(0x0d, u32(1)) },
      { name: 'a second HELLO', bytes: hello() },
      { name: 'OUTPUT', bytes: frame(0x06, [0x61]) },
      { name: 'unknown type 0x42', bytes: frame(0x42) },
    )
    .map(({ name, bytes }) => ({ where: 'start' as const, what: `${name} before START`, spec: { then: [hex(bytes)] }, expect: { code: PROTOCOL } }));
  const truncated = fc.integer({ min: 1, max: 50 }).map((at) => ({
    where: 'start' as const,
    what: `START cut at ${at} then EOF`,
    // The driver's START is sent whole; this one is cut, and carries no fd, as a cut frame would lose it.
    spec: { then: [hex(startFrame().subarray(0, at))], halfClose: true },
    // A half-close while START is read is answered (docs/protocol.md): the read ends in EOF.
    expect: { code: PROTOCOL },
  }));
  const oversize = fc.integer({ min: 64 * 1024 + 1, max: 0xffffffff }).map((length) => ({
    where: 'start' as const,
    what: `START header claiming ${length} bytes`,
    spec: { then: [hex(header(0x03, length))] },
    expect: { code: PROTOCOL },
  }));
  // A byte of the driver's own valid START payload replaced: refused as BAD_START, unless still valid.
  const mutated = fc.tuple(fc.integer({ min: 5, max: 60 }), fc.integer({ min: 0, max: 255 })).map(([at, value]) => {
    return {
      where: 'start' as const,
      what: `START byte ${at} set to ${value}`,
      // A START that is still valid starts `cat`: the case ends at its STARTED (closing ends it).
      spec: { start: { fds: ['cwd' as const], mutateAt: at, mutateTo: value }, untilStarted: true, waitMs: 8000 },
      expect: { codeOrStarted: BAD_START },
    };
  });
  return fc.sample(fc.oneof(otherFrame, truncated, oversize, mutated), { numRuns: runs, seed });
}

/** Live sessions (`cat`): valid frames, then one bad one. */
function dataCases(runs: number, seed: number): FrameCase[] {
  const bad = fc.tuple(fc.array(validDataFrame, { maxLength: 6 }), badDataFrame).map(([prefix, last]) => ({
    where: 'data' as const,
    what: `${prefix.map((f) => f.name).join(', ') || 'nothing'}, then ${last.name}`,
    spec: { start: { fds: ['cwd' as const] }, afterStarted: true, then: [...prefix.map((f) => hex(f.bytes)), hex(last.bytes)], waitMs: 8000 },
    expect: last.expect,
  }));
  const cut = fc.tuple(fc.array(validDataFrame, { maxLength: 4 }), validDataFrame, fc.integer({ min: 1, max: 4 })).map(([prefix, last, at]) => ({
    where: 'data' as const,
    what: `${prefix.map((f) => f.name).join(', ') || 'nothing'}, then ${last.name} cut at ${at} and EOF`,
    spec: { start: { fds: ['cwd' as const] }, afterStarted: true, then: [...prefix.map((f) => hex(f.bytes)), hex(last.bytes.subarray(0, at))], halfClose: true, waitMs: 8000 },
    expect: { closedQuietly: true } as Expect,
  }));
  return fc.sample(fc.oneof({ arbitrary: bad, weight: 4 }, { arbitrary: cut, weight: 1 }), { numRuns: runs, seed });
}

export function judge(expect: Expect, result: RawResult): boolean {
  const errors = result.frames.filter((f) => f.startsWith('error:'));
  if ('welcome' in expect) return result.frames[0] === 'welcome';
  if ('closedQuietly' in expect) return result.closed && errors.length === 0;
  if ('answered' in expect) {
    // The answer after WELCOME.
    if (result.frames[result.frames[0] === 'welcome' ? 1 : 0] !== expect.answered) return false;
    if (!('thenCode' in expect)) return errors.length === 0;
    return result.closed && errors.length === 1 && result.frames.at(-1) === `error:${expect.thenCode}`;
  }
  if (!result.closed) return false;
  if ('codeOrStarted' in expect) return result.frames.includes('started') ? errors.length <= 1 : errors.length === 1 && result.code === expect.codeOrStarted;
  // Exactly one ERROR, the last frame, with the documented code.
  return errors.length === 1 && result.frames.at(-1) === `error:${expect.code}`;
}

export function frameCases(scale: 'fast' | 'full', seed: number): FrameCase[] {
  // Full: 10,000 cases, most of them at the cheap end (the broker's HELLO needs no worker).
  const [h, s, d] = scale === 'full' ? [6500, 2200, 1300] : [24, 12, 12];
  return [...helloCases(h, seed), ...startCases(s, seed + 1), ...dataCases(d, seed + 2)];
}

/** Runs cases `parallel` at a time through the driver; returns the ones answered otherwise. */
export async function runFrameCases(ctx: TortureContext, cases: FrameCase[], parallel: number): Promise<{ passed: number; unexpected: string[] }> {
  const unexpected: string[] = [];
  let passed = 0;
  let next = 0;
  const lane = async () => {
    while (next < cases.length) {
      const index = next++;
      const item = cases[index]!;
      const result = await ctx.driver.raw(item.spec);
      if (judge(item.expect, result)) passed += 1;
      else unexpected.push(`${item.where}: ${item.what}: expected ${JSON.stringify(item.expect)}, got ${JSON.stringify(result)}`);
      if (index % 500 === 499) ctx.note(`bad frames: ${index + 1} of ${cases.length}`);
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return { passed, unexpected };
}
