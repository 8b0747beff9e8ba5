// Bad frames, version 3: hostile LIST, ATTACH and STOP_SESSION from the agent's MainPID, against one
// live kept session (a program that wrote "ready" and sleeps): bad lengths, ids that do not exist,
// offsets at, past, far past its next and at or above 2^63, roles out of range, descriptors riding on
// the request, two requests after one WELCOME, and an observer that types. Each case carries the answer
// the version 3 contract gives it (docs/protocol.md "Version 3"); frames are built here from bytes.
import fc from 'fast-check';
import type { TortureContext } from './report.ts';
import { frame, header, hello, judge, type Expect, type FrameCase } from './bad-frames.ts';

const PROTOCOL = 1;
const NO_SESSION = 12;
const NOT_CONTROLLER = 14;
const BAD_OFFSET = 16;
/** ATTACH's fromOffset meaning "from the next byte" (2^64-1). */
const FROM_NOW = 0xffff_ffff_ffff_ffffn;
const TWO_63 = 1n << 63n;

const hex = (bytes: Buffer) => bytes.toString('hex');
const u64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(n);
  return b;
};

export function list(): Buffer {
  return frame(0x0f);
}

export function attach(id: bigint, fromOffset: bigint, role: number, rows = 24, cols = 80): Buffer {
  const payload = Buffer.alloc(21);
  payload.writeBigUInt64BE(id, 0);
  payload.writeBigUInt64BE(fromOffset, 8);
  payload[16] = role;
  payload.writeUInt16BE(rows, 17);
  payload.writeUInt16BE(cols, 19);
  return frame(0x11, payload);
}

export function stopSession(id: bigint): Buffer {
  return frame(0x15, u64(id));
}

/** HELLO offering version 3 only. */
export const HELLO_V3 = hex(hello(3, 3));

/** The one live session the cases aim at: its id, and its next offset (nothing writes to it). */
export interface Target {
  id: number;
  next: number;
}

/** A request after WELCOME (version 3), held until it is answered as `expect` says, or closed. */
function request(what: string, bytes: Buffer[], expect: Expect, extra: Partial<FrameCase['spec']> = {}): FrameCase {
  const answered = 'answered' in expect && !('thenCode' in expect) ? { untilFrame: expect.answered } : {};
  return { where: 'kept', what, spec: { first: HELLO_V3, then: bytes.map(hex), waitMs: 8000, ...answered, ...extra }, expect } as FrameCase;
}

/** The cases every run tries, once each. */
export function fixedKeptCases(target: Target): FrameCase[] {
  const id = BigInt(target.id);
  const next = BigInt(target.next);
  const absent = id ^ 0x5a5a5n;
  const cases: FrameCase[] = [];
  // Lengths: LIST is empty, ATTACH exactly 21 bytes, STOP_SESSION exactly 8.
  for (const n of [1, 4, 8, 21]) cases.push(request(`LIST of ${n} bytes`, [frame(0x0f, Buffer.alloc(n))], { code: PROTOCOL }));
  for (const n of [0, 1, 8, 16, 20, 22, 64]) cases.push(request(`ATTACH of ${n} bytes`, [frame(0x11, Buffer.alloc(n, 1))], { code: PROTOCOL }));
  for (const n of [0, 4, 7, 9, 16]) cases.push(request(`STOP_SESSION of ${n} bytes`, [frame(0x15, Buffer.alloc(n, 1))], { code: PROTOCOL }));
  for (const type of [0x0f, 0x11, 0x15]) cases.push(request(`type ${type} header claiming 2^32-1 bytes`, [header(type, 0xffffffff)], { code: PROTOCOL }));
  cases.push(request('ATTACH cut at 10, then EOF', [attach(id, 0n, 2).subarray(0, 15)], { code: PROTOCOL }, { halfClose: true }));
  // Server-only types and the other requests' neighbours as the request.
  for (const type of [0x02, 0x04, 0x10, 0x12, 0x13, 0x14]) cases.push(request(`server-only type ${type} as the request`, [frame(type, Buffer.alloc(4))], { code: PROTOCOL }));
  for (const [name, bytes] of [['INPUT', frame(0x05, [0x61])], ['CREDIT', frame(0x0d, [0, 0, 0, 1])], ['a second HELLO', hello(3, 3)], ['END_INPUT', frame(0x0e)]] as const) {
    cases.push(request(`${name} as the request`, [bytes], { code: PROTOCOL }));
  }
  // Ids: 0 is never valid, at or above 2^53 is no id; one that does not exist.
  cases.push(request('ATTACH of id 0', [attach(0n, 0n, 2)], { code: PROTOCOL }));
  cases.push(request('ATTACH of id 2^53', [attach(1n << 53n, 0n, 2)], { code: PROTOCOL }));
  cases.push(request('ATTACH of id 2^64-1', [attach(FROM_NOW, 0n, 2)], { code: PROTOCOL }));
  cases.push(request('ATTACH of an id that does not exist', [attach(absent, 0n, 1)], { code: NO_SESSION }));
  cases.push(request('STOP_SESSION of id 0', [stopSession(0n)], { code: PROTOCOL }));
  cases.push(request('STOP_SESSION of an id that does not exist', [stopSession(absent)], { code: NO_SESSION }));
  // Offsets: at next is "from now"; past it, far past it, 2^63-1, 2^63 and above (FROM_NOW aside) are refused.
  for (const role of [1, 2]) {
    const as = role === 1 ? 'control' : 'observe';
    cases.push(request(`ATTACH ${as} from 0 (replay)`, [attach(id, 0n, role)], { answered: 'attached' }));
    cases.push(request(`ATTACH ${as} at next`, [attach(id, next, role)], { answered: 'attached' }));
    cases.push(request(`ATTACH ${as} from now`, [attach(id, FROM_NOW, role)], { answered: 'attached' }));
    for (const [what, offset] of [['next+1', next + 1n], ['far past next (2^40)', 1n << 40n], ['2^63-1', TWO_63 - 1n], ['2^63', TWO_63], ['2^64-2', FROM_NOW - 1n]] as const) {
      cases.push(request(`ATTACH ${as} from ${what}`, [attach(id, offset, role)], { code: BAD_OFFSET }));
    }
  }
  // Roles and sizes: role 1 or 2 only; rows and cols 1..65535 even for an observer.
  for (const role of [0, 3, 128, 255]) cases.push(request(`ATTACH with role ${role}`, [attach(id, 0n, role)], { code: PROTOCOL }));
  cases.push(request('ATTACH observe with 0 rows', [attach(id, 0n, 2, 0, 80)], { code: PROTOCOL }));
  cases.push(request('ATTACH control with 0 cols', [attach(id, 0n, 1, 24, 0)], { code: PROTOCOL }));
  // Descriptors riding on a request: none may travel with LIST, ATTACH or STOP_SESSION.
  for (const fd of ['cwd', 'socket', 'pipe'] as const) {
    cases.push(request(`LIST carrying a ${fd} fd`, [list()], { code: PROTOCOL }, { fdOnThen: fd }));
    cases.push(request(`ATTACH carrying a ${fd} fd`, [attach(id, 0n, 2)], { code: PROTOCOL }, { fdOnThen: fd }));
    // Refused before it is served: the session must still be there afterwards (checked by the class).
    cases.push(request(`STOP_SESSION of the live session carrying a ${fd} fd`, [stopSession(id)], { code: PROTOCOL }, { fdOnThen: fd }));
  }
  // Two requests after one WELCOME: the first is answered, the second never read as a request.
  cases.push(request('LIST twice in one write', [Buffer.concat([list(), list()])], { answered: 'sessions' }));
  cases.push(request('LIST, then ATTACH', [list(), attach(id, 0n, 2)], { answered: 'sessions' }));
  cases.push(request('ATTACH of an absent id twice', [Buffer.concat([attach(absent, 0n, 2), attach(absent, 0n, 2)])], { code: NO_SESSION }));
  // A second ATTACH once attached is a frame of the data phase that no client sends: that connection's PROTOCOL.
  cases.push(request('ATTACH, then ATTACH again once attached', [attach(id, next, 2)], { answered: 'attached', thenCode: PROTOCOL }, { thenAfterAttached: [hex(attach(id, 0n, 1))] }));
  cases.push(request('ATTACH, then LIST once attached', [attach(id, next, 2)], { answered: 'attached', thenCode: PROTOCOL }, { thenAfterAttached: [hex(list())] }));
  // An observer's input, resize, signal, end of input and stop: NOT_CONTROLLER, never applied.
  for (const [name, bytes] of [['INPUT', frame(0x05, Buffer.from('typed by an observer\r'))], ['RESIZE', frame(0x07, [0, 9, 0, 9])], ['SIGNAL INT', frame(0x08, [2])], ['END_INPUT', frame(0x0e)], ['STOP', frame(0x09)]] as const) {
    cases.push(request(`an observer's ${name}`, [attach(id, next, 2)], { answered: 'attached', thenCode: NOT_CONTROLLER }, { thenAfterAttached: [hex(bytes)] }));
  }
  // Version 2 does not know these types: PROTOCOL where START was due.
  for (const [name, bytes] of [['LIST', list()], ['ATTACH', attach(id, 0n, 2)], ['STOP_SESSION', stopSession(id)]] as const) {
    cases.push({ where: 'kept', what: `${name} in a version 2 connection`, spec: { first: hex(hello(1, 2)), then: [hex(bytes)], waitMs: 8000 }, expect: { code: PROTOCOL } } as FrameCase);
  }
  return cases;
}

/**
 * ATTACHes with every field drawn at random, each judged by the contract's order: the id (1..2^53-1,
 * else PROTOCOL), the offset (below 2^63 or FROM_NOW, else BAD_OFFSET), the role (1 or 2) and the size
 * (1..65535), then the session (NO_SESSION), then the offset against its next (BAD_OFFSET).
 */
export function randomAttachCases(target: Target, runs: number, seed: number): FrameCase[] {
  const live = BigInt(target.id);
  const next = BigInt(target.next);
  const id = fc.oneof(
    { arbitrary: fc.constant(live), weight: 4 },
    fc.constant(0n),
    fc.bigInt({ min: 1n, max: (1n << 52n) - 1n }).filter((n) => n !== live),
    fc.bigInt({ min: 1n << 53n, max: FROM_NOW }),
  );
  const offset = fc.oneof(
    fc.bigInt({ min: 0n, max: next }),
    fc.bigInt({ min: next + 1n, max: TWO_63 - 1n }),
    fc.bigInt({ min: TWO_63, max: FROM_NOW }),
    fc.constant(FROM_NOW),
  );
  const role = fc.oneof({ arbitrary: fc.constantFrom(1, 2), weight: 4 }, fc.integer({ min: 0, max: 255 }));
  const size = fc.oneof({ arbitrary: fc.integer({ min: 1, max: 0xffff }), weight: 8 }, fc.constant(0));
  return fc.sample(fc.tuple(id, offset, role, size, size), { numRuns: runs, seed }).map(([i, o, r, rows, cols]) => {
    let expect: Expect;
    if (i === 0n || i >= 1n << 53n) expect = { code: PROTOCOL };
    else if (o >= TWO_63 && o !== FROM_NOW) expect = { code: BAD_OFFSET };
    else if ((r !== 1 && r !== 2) || rows === 0 || cols === 0) expect = { code: PROTOCOL };
    else if (i !== live) expect = { code: NO_SESSION };
    else if (o !== FROM_NOW && o > next) expect = { code: BAD_OFFSET };
    else expect = { answered: 'attached' };
    return request(`ATTACH id ${i} from ${o === FROM_NOW ? 'now' : o} role ${r} size ${rows}x${cols}`, [attach(i, o, r, rows, cols)], expect);
  });
}

/**
 * ATTACHes one kept session takes in its life: the worker numbers its connections 1..255 and never
 * reuses a number (the contract's control channel, ATTACH's conn u8), so a session's 256th ATTACH is
 * refused SESSION_STATE. Each target serves at most this many cases, then a fresh one takes over.
 */
const CASES_PER_TARGET = 100;

/** One target after another (started, detached, its cases run one at a time, found untouched, stopped):
 * the fixed cases on the first, the random ATTACHes in batches on the next ones. Cases run one after
 * another: attaching lanes at once would meet the observer cap. */
export async function runKeptFrameCases(ctx: TortureContext, runs: number, seed: number): Promise<{ cases: number; passed: number; unexpected: string[]; notes: string[] }> {
  const { driver } = ctx;
  const unexpected: string[] = [];
  let passed = 0;
  let total = 0;
  let targets = 0;
  const batches: ((target: Target) => FrameCase[])[] = [(target) => fixedKeptCases(target)];
  for (let done = 0, batch = 0; done < runs; done += CASES_PER_TARGET, batch += 1) {
    const count = Math.min(CASES_PER_TARGET, runs - done);
    batches.push((target) => randomAttachCases(target, count, seed + batch));
  }
  for (const makeCases of batches) {
    const name = `torture-kept-target-${(targets += 1)}`;
    const started = await driver.keep({ op: 'start', name, argv: ['sh', '-c', 'printf ready; exec sleep 100000'], keepMs: 600_000, read: { bytes: 5 } });
    if (started.error) throw new Error(`the target session did not start: ${started.error} ${started.message}`);
    const target: Target = { id: started.id!, next: 5 };
    await driver.keep({ op: 'detach', name });
    try {
      const cases = makeCases(target);
      for (const item of cases) {
        const result = await driver.raw(item.spec);
        if (judge(item.expect, result)) passed += 1;
        else unexpected.push(`kept: ${item.what}: expected ${JSON.stringify(item.expect)}, got ${JSON.stringify(result)}`);
        total += 1;
        if (total % 200 === 0) ctx.note(`bad kept frames: ${total}`);
      }
      // Nothing hostile reached the session: still listed, nothing typed into it, no STOP_SESSION served.
      const listed = ((await driver.keep({ op: 'list' })).list ?? []) as { id: number; state: string; next: number }[];
      const entry = listed.find((one) => one.id === target.id);
      total += 1;
      if (entry !== undefined && entry.next === target.next) passed += 1;
      else unexpected.push(`kept: target ${target.id} after its cases: ${JSON.stringify(entry ?? 'gone')} (expected next ${target.next})`);
    } finally {
      await driver.keep({ op: 'stop-session', id: target.id });
    }
  }
  const notes = [`${total - targets} hostile version 3 requests against ${targets} kept sessions (at most ${CASES_PER_TARGET} each), each found untouched afterwards`];
  return { cases: total, passed, unexpected, notes };
}
