// Dialect 3 of the worker ↔ helper channel (kept sessions) as the worker encodes and decodes it: ATTACH
// and QUERY built exactly, DETACHED, STATE and PROGRAM_ENDED strict, bounded by what the worker asked, split anywhere.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperChannelError, HelperDecoder, encodeAttach, encodeQuery, type HelperMessage } from '../../src/control/helper-channel.ts';

const RETAIN = 1 << 20;

function message(type: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

function detached(conn: number, reason: number, code: number, remainder = Buffer.alloc(0), text = ''): Buffer {
  const fixed = Buffer.alloc(8);
  fixed[0] = conn;
  fixed[1] = reason;
  fixed.writeUInt16BE(code, 2);
  fixed.writeUInt32BE(remainder.length, 4);
  return message(0x46, Buffer.concat([fixed, remainder, Buffer.from(text)]));
}

interface StateFields { oldest: bigint; next: bigint; dropped: bigint; controller: number; observers: number; generation: number; done: number; status: number }

function state(fields: Partial<StateFields> = {}): Buffer {
  const f: StateFields = { oldest: 0n, next: 10n, dropped: 0n, controller: 0, observers: 0, generation: 1, done: 0, status: 0, ...fields };
  const p = Buffer.alloc(35);
  p.writeBigUInt64BE(f.oldest, 0);
  p.writeBigUInt64BE(f.next, 8);
  p.writeBigUInt64BE(f.dropped, 16);
  p[24] = f.controller;
  p[25] = f.observers;
  p.writeUInt32BE(f.generation, 26);
  p[30] = f.done;
  p.writeInt32BE(f.status, 31);
  return message(0x47, p);
}

const programEnded = (status: number) => {
  const p = Buffer.alloc(4);
  p.writeInt32BE(status);
  return message(0x48, p);
};

function kept(): HelperDecoder {
  return new HelperDecoder({ kept: { retainBytes: RETAIN } });
}

function refuses(decoder: HelperDecoder, stream: Buffer, pattern: RegExp): void {
  const { fault } = decoder.push(stream);
  assert.ok(fault instanceof HelperChannelError && pattern.test(fault.message), `${fault?.message} !~ ${pattern}`);
}

test('ATTACH is 14 bytes after its header, QUERY is empty', () => {
  const attach = encodeAttach({ conn: 7, role: 'observe', fromOffset: 0x0102030405060708n, rows: 24, cols: 80 });
  assert.is(attach.toString('hex'), '05' + '0000000e' + '07' + '02' + '0102030405060708' + '0018' + '0050');
  const now = encodeAttach({ conn: 255, role: 'control', fromOffset: 0xffff_ffff_ffff_ffffn, rows: 65535, cols: 1 });
  assert.is(now.toString('hex'), '05' + '0000000e' + 'ff' + '01' + 'ffffffffffffffff' + 'ffff' + '0001');
  assert.is(encodeQuery().toString('hex'), '0600000000');
});

test('ATTACH refuses a conn outside 1..255, a size outside 1..65535, an offset that is no u64', () => {
  const base = { conn: 1, role: 'control' as const, fromOffset: 0n, rows: 24, cols: 80 };
  for (const bad of [{ conn: 0 }, { conn: 256 }, { conn: 1.5 }, { rows: 0 }, { cols: 65536 }, { fromOffset: -1n }, { fromOffset: 1n << 64n }, { role: 'admin' }]) {
    assert.throws(() => encodeAttach({ ...base, ...bad } as Parameters<typeof encodeAttach>[0]), (error: unknown) => error instanceof HelperChannelError, JSON.stringify(bad, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
  }
});

test('DETACHED, STATE and PROGRAM_ENDED decode, split at every offset', () => {
  const stream = Buffer.concat([
    detached(0, 3, 0),
    detached(4, 5, 14, Buffer.from('xyz'), 'input from an observer'),
    state({ oldest: 5n, next: 100n, dropped: 5n, controller: 255, observers: 2, generation: 3, done: 1, status: 0x0100 }),
    programEnded(0x0100),
  ]);
  const expected: HelperMessage[] = [
    { type: 'detached', report: { conn: 0, reason: 'client-gone', code: 0, remainder: Buffer.alloc(0), text: '' } },
    { type: 'detached', report: { conn: 4, reason: 'protocol', code: 14, remainder: Buffer.from('xyz'), text: 'input from an observer' } },
    { type: 'state', state: { oldest: 5n, next: 100n, dropped: 5n, controller: undefined, observers: 2, generation: 3, programDone: true, waitStatus: 0x0100 } },
    { type: 'program-ended', waitStatus: 0x0100 },
  ];
  for (let cut = 0; cut <= stream.length; cut++) {
    const decoder = kept();
    decoder.attached(4);
    decoder.queried();
    const first = decoder.push(stream.subarray(0, cut));
    const rest = decoder.push(stream.subarray(cut));
    assert.not.ok(first.fault ?? rest.fault, `cut at ${cut}: ${(first.fault ?? rest.fault)?.message}`);
    assert.equal([...first.messages, ...rest.messages], expected, `cut at ${cut}`);
  }
});

test('a session that is not kept sends none of them, and cannot be attached to or queried', () => {
  refuses(new HelperDecoder(), detached(0, 3, 0), /DETACHED from a session that is not kept/);
  refuses(new HelperDecoder(), programEnded(0), /PROGRAM_ENDED from a session that is not kept/);
  refuses(new HelperDecoder(), state(), /STATE from a session that is not kept/);
  assert.throws(() => new HelperDecoder().attached(1), /not kept/);
  assert.throws(() => new HelperDecoder().queried(), /not kept/);
});

test('DETACHED: only for conn 0 or an attached conn, once each; a known reason with its own codes', () => {
  refuses(kept(), detached(1, 3, 0), /conn 1, which was never attached/);
  refuses(kept(), Buffer.concat([detached(0, 3, 0), detached(0, 9, 0)]), /a second DETACHED for conn 0/);
  const reused = kept();
  reused.attached(2);
  assert.throws(() => reused.attached(2), /not a fresh one/);
  assert.throws(() => kept().attached(0), /not a fresh one/);
  // Free again once its DETACHED came (REVIEW-3): attached anew, one DETACHED per attach still.
  const again = kept();
  again.attached(2);
  assert.not.ok(again.push(detached(2, 3, 0)).fault);
  again.attached(2);
  assert.not.ok(again.push(detached(2, 3, 0)).fault, 'the second attach\'s DETACHED');
  refuses(again, detached(2, 3, 0), /a second DETACHED for conn 2/);
  refuses(kept(), detached(0, 6, 0), /unknown reason 6/);
  refuses(kept(), detached(0, 3, 9), /client-gone with code 9/);
  refuses(kept(), detached(0, 4, 1), /flow with code 1/);
  refuses(kept(), detached(0, 5, 16), /protocol with code 16/);
  refuses(kept(), detached(0, 8, 14), /refused with code 14/);
  refuses(kept(), detached(0, 8, 16, Buffer.from('x')), /refused with a remainder/);
  refuses(kept(), detached(0, 9, 10), /ending with code 10/);
  for (const code of [16, 17, 18]) assert.not.ok(kept().push(detached(0, 8, code)).fault, `refused ${code}`);
  refuses(kept(), message(0x46, Buffer.alloc(7)), /DETACHED of 7 bytes/);
  const lying = Buffer.alloc(8);
  lying[1] = 9;
  lying.writeUInt32BE(5, 4);
  refuses(kept(), message(0x46, Buffer.concat([lying, Buffer.from('ab')])), /remainder of 5 bytes/);
  refuses(kept(), detached(0, 9, 0, Buffer.alloc(0), 'two\nlines'), /control character/);
  refuses(kept(), detached(0, 9, 0, Buffer.alloc(0), 'x'.repeat(1025)), /exceeds 1024/);
  refuses(kept(), message(0x46, Buffer.concat([Buffer.from([0, 9, 0, 0, 0, 0, 0, 0]), Buffer.from([0xff])])), /not UTF-8/);
});

test('STATE: only in answer to a QUERY, 35 bytes, its offsets within the ring and never going back', () => {
  refuses(kept(), state(), /a STATE nobody asked for/);
  const once = kept();
  once.queried();
  refuses(once, Buffer.concat([state(), state()]), /a STATE nobody asked for/);
  const asked = () => {
    const d = kept();
    d.queried();
    d.queried();
    return d;
  };
  refuses(asked(), message(0x47, Buffer.alloc(32)), /STATE of 32 bytes/);
  refuses(asked(), state({ oldest: 11n, next: 10n }), /oldest 11 is past next 10/);
  refuses(asked(), state({ oldest: 0n, next: BigInt(RETAIN) + 1n }), /holds 1048577 bytes in a ring of 1048576/);
  refuses(asked(), state({ oldest: 1n << 63n, next: 1n << 63n }), /at or past 2\^63/);
  refuses(asked(), state({ oldest: 5n, dropped: 6n }), /dropped 6 is past oldest 5/);
  refuses(asked(), state({ generation: 0 }), /generation 0/);
  refuses(asked(), state({ done: 2 }), /programDone 2/);
  refuses(asked(), state({ done: 0, status: 9 }), /wait status of a program that runs/);
  refuses(asked(), state({ done: 1, status: -1 }), /wait status -1/);
  refuses(asked(), Buffer.concat([state({ next: 10n }), state({ next: 9n })]), /STATE went back/);
  refuses(asked(), Buffer.concat([state({ generation: 2 }), state({ generation: 1 })]), /STATE went back/);
  refuses(asked(), Buffer.concat([state({ done: 1 }), state({ done: 0 })]), /runs again/);
  const many = kept();
  for (let i = 0; i < 16; i++) many.queried();
  assert.throws(() => many.queried(), /more than 16 QUERY/);
});

test('PROGRAM_ENDED once, a 16-bit wait status; a kept END has no remainder of its own', () => {
  refuses(kept(), Buffer.concat([programEnded(0), programEnded(0)]), /a second PROGRAM_ENDED/);
  refuses(kept(), programEnded(0x10000), /wait status 65536/);
  refuses(kept(), message(0x48, Buffer.alloc(5)), /PROGRAM_ENDED of 5 bytes/);
  const fixed = Buffer.alloc(23);
  fixed[0] = 1;
  fixed.writeUInt32BE(1, 19);
  refuses(kept(), message(0x43, Buffer.concat([fixed, Buffer.from('x')])), /END of a kept session with a remainder/);
  fixed.writeUInt32BE(0, 19);
  assert.not.ok(kept().push(message(0x43, fixed)).fault);
  // Nothing after END, dialect 3's messages included.
  refuses(kept(), Buffer.concat([message(0x43, fixed), detached(0, 9, 0)]), /a message after END/);
});

test.run();
