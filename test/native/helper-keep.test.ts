// A kept session (--keep) against the helper's real binary: the ring with absolute offsets, replay then
// live with nothing lost or repeated, TRUNCATED, several connections with their own cursors and credit.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { input, sh } from './helper-harness.ts';
import { KeptRun } from './keep-harness.ts';

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

test('the START connection gets STARTED, then output from offset 0; the end: DETACHED(ending) for it, then END with no remainder', async () => {
  const run = new KeptRun(sh('stty -opost; printf hello; read x; printf bye'));
  const c0 = run.conn(0);
  await run.until('hello', () => c0.output.toString() === 'hello');
  c0.send(input('\n'));
  const ended = await run.ended;
  assert.is(ended.end?.reason, 'exit');
  assert.is(ended.end?.remainder.length, 0);
  assert.is(c0.output.toString(), 'hello\nbye');
  assert.equal(c0.detached && [c0.detached.reason, c0.detached.code], ['ending', 0]);
  assert.ok(run.messages.some((m) => m.type === 'program-ended' && m.waitStatus === 0));
  const order = run.messages.map((m) => m.type).filter((t) => t !== 'log');
  assert.equal(order.slice(-3), ['detached', 'figures', 'end']);
});

/** A file of `size` random bytes for the program to cat, so the test knows every byte it writes. */
function withData<R>(size: number, body: (path: string, data: Buffer) => Promise<R>): Promise<R> {
  const dir = mkdtempSync(join(tmpdir(), 'helper-keep-'));
  const path = join(dir, 'data');
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4) data.writeUInt32LE((Math.imul(i + 1, 2654435761) ^ (i >>> 7)) >>> 0, i);
  writeFileSync(path, data);
  return body(path, data).finally(() => rmSync(dir, { recursive: true }));
}

// The terminal passes bytes through unchanged once -opost and raw input are set; `read` waits for the
// test's newline so every connection has had its share before the end.
const catThenWait = (path: string) => sh(`stty raw -echo -opost; cat ${path}; read x`);

test('replay then live, nothing lost or repeated: a connection detaches, another attaches at the last offset the first saw (sha256 of 4 MB)', async () => {
  await withData(4 << 20, async (path, data) => {
    const run = new KeptRun(catThenWait(path), { retainBytes: 8 << 20, autoCredit: false });
    const c0 = run.conn(0);
    await run.until('the first window', () => c0.received === 262144);
    c0.close(); // detached: the program writes on into the ring
    await run.until('conn 0 let go', () => run.detachedOf(0) !== undefined);
    assert.equal([run.detachedOf(0)!.reason, run.detachedOf(0)!.code], ['client-gone', 0]);
    const seen = c0.position!;
    assert.is(seen, 262144n);
    const c1 = run.attach(1, 'control', seen);
    const c2 = run.attach(2, 'observe', 0n); // replay of everything, beside the controller
    await run.until('all of it on both', () => c1.position === BigInt(data.length) && c2.position === BigInt(data.length));
    assert.is(c1.attached!.generation, 2);
    assert.is(c1.attached!.oldest, 0n);
    assert.ok(c1.attached!.next >= seen && c1.attached!.next <= BigInt(data.length));
    assert.is(c2.attached!.role, 2);
    assert.is(sha(Buffer.concat([c0.output, c1.output])), sha(data), 'conn 0 then conn 1: the program\'s bytes');
    assert.is(sha(c2.output), sha(data), 'the observer from 0: the program\'s bytes');
    c1.send(input('\n'));
    const ended = await run.ended;
    assert.is(ended.end?.reason, 'exit');
    assert.equal([run.detachedOf(1)?.reason, run.detachedOf(2)?.reason], ['ending', 'ending']);
    assert.equal(c2.events, [{ type: 'changed', generation: 2, role: 2 }].slice(0, 0), 'the observer came after the hand-over: no change told');
  });
});

test.run();
