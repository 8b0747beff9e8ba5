// A kept session (--keep) against the helper's real binary: the ring with absolute offsets, replay then
// live with nothing lost or repeated, TRUNCATED, several connections with their own cursors and credit.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, input, sh } from './helper-harness.ts';
import { FROM_NOW, KeptRun } from './keep-harness.ts';

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

test('a ring that wrapped while detached: ATTACH from 0 gets TRUNCATED(oldest, dropped), then what the ring holds', async () => {
  await withData(100_000, async (path, data) => {
    const run = new KeptRun(catThenWait(path), { retainBytes: 4096 });
    const c0 = run.conn(0);
    c0.close();
    await run.until('conn 0 let go', () => run.detachedOf(0) !== undefined);
    for (let state = await run.query(); state.next < BigInt(data.length); state = await run.query()) {
      assert.ok(state.next - state.oldest <= 4096n, 'never more than the ring');
    }
    const state = await run.query();
    assert.equal([state.oldest, state.next, state.dropped, state.controller], [BigInt(data.length - 4096), BigInt(data.length), BigInt(data.length - 4096), undefined]);
    const c1 = run.attach(1, 'control', 0n);
    await run.until('the ring', () => c1.position === BigInt(data.length));
    assert.equal(c1.events, [{ type: 'truncated', oldest: BigInt(data.length - 4096), dropped: BigInt(data.length - 4096), at: 0 }]);
    assert.equal([c1.attached!.oldest, c1.attached!.next], [BigInt(data.length - 4096), BigInt(data.length)]);
    assert.ok(c1.output.equals(data.subarray(data.length - 4096)));
    c1.send(input('\n'));
    assert.is((await run.ended).end?.reason, 'exit');
  });
});

test('a controller the ring overtakes gets TRUNCATED and goes on from oldest; every byte it gets is at its offset', async () => {
  await withData(1 << 20, async (path, data) => {
    const run = new KeptRun(catThenWait(path), { retainBytes: 65536 });
    const c0 = run.conn(0);
    c0.socket.pauseReading();
    while ((await run.query()).next < BigInt(data.length));
    c0.socket.resumeReading();
    await run.until('the end of the data', () => c0.position === BigInt(data.length));
    const truncations = c0.events.filter((e) => e.type === 'truncated');
    assert.ok(truncations.length >= 1, 'the ring passed it');
    // Rebuild what it got by offsets: before each TRUNCATED, consecutive bytes; then from its oldest.
    let offset = 0, taken = 0;
    const output = c0.output;
    for (const t of [...truncations, { oldest: BigInt(data.length), at: output.length }]) {
      assert.ok(output.subarray(taken, t.at).equals(data.subarray(offset, offset + (t.at - taken))), `bytes before offset ${offset + t.at - taken}`);
      offset = Number(t.oldest);
      taken = t.at;
    }
    assert.is(run.detachedOf(0), undefined, 'the controller is not let go');
    c0.send(input('\n'));
    assert.is((await run.ended).end?.reason, 'exit');
  });
});

test('the program ends while detached: the helper lives on with the ring (PROGRAM_ENDED, STATE); an ATTACH gets the replay, then the end', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'helper-keep-'));
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  try {
    const run = new KeptRun(sh(`stty raw -echo -opost; printf abc; cat ${fifo} >/dev/null; printf def; exit 3`));
    const c0 = run.conn(0);
    await run.until('abc', () => c0.output.toString() === 'abc');
    c0.close();
    await run.until('conn 0 let go', () => run.detachedOf(0) !== undefined);
    writeFileSync(fifo, 'go');
    await run.until('PROGRAM_ENDED', () => run.messages.some((m) => m.type === 'program-ended'));
    assert.ok(run.messages.some((m) => m.type === 'program-ended' && m.waitStatus === 3 << 8));
    const state = await run.query();
    assert.equal([state.programDone, state.waitStatus, state.oldest, state.next, state.observers, state.controller], [true, 3 << 8, 0n, 6n, 0, undefined]);
    assert.not.ok(run.messages.some((m) => m.type === 'end'), 'no END while nobody has seen it');
    const c1 = run.attach(1, 'observe', 0n);
    const ended = await run.ended;
    assert.is(ended.code, 3, 'the helper exits as the program did');
    assert.is(ended.end?.reason, 'exit');
    assert.is(c1.output.toString(), 'abcdef');
    assert.equal([run.detachedOf(1)?.reason, run.detachedOf(1)?.code], ['ending', 0]);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('an ATTACH to a program that ended while detached gets the whole replay, window after window, before the end', async () => {
  await withData(900_000, async (path, data) => {
    const run = new KeptRun(sh(`stty raw -echo -opost; read x; cat ${path}`));
    const c0 = run.conn(0);
    c0.close();
    await run.until('conn 0 let go', () => run.detachedOf(0) !== undefined);
    const c1 = run.attach(1, 'control', 0n);
    await run.until('ATTACHED', () => c1.attached !== undefined);
    c1.close(); // one connection more that came and went
    await run.until('conn 1 let go', () => run.detachedOf(1) !== undefined);
    // The program still waits in read: a controller types and leaves at once.
    const typist = run.attach(2, 'control', FROM_NOW);
    await run.until('ATTACHED', () => typist.attached !== undefined);
    typist.send(input('\n'));
    typist.close();
    await run.until('PROGRAM_ENDED', () => run.messages.some((m) => m.type === 'program-ended'));
    const late = run.attach(3, 'observe', 0n);
    const ended = await run.ended;
    assert.is(ended.end?.reason, 'exit');
    // All the ring held when it came (the program had ended): more than the first window of 256 KiB.
    assert.is(BigInt(late.received), late.attached!.next);
    assert.ok(late.received >= data.length);
    assert.is(sha(late.output.subarray(late.received - data.length)), sha(data));
  });
});

test('a detached program asking its terminal a question (\\e[6n) does not hang the helper; a flood while detached stays within the ring', async () => {
  const flood = 20_000_000;
  const run = new KeptRun(sh(`stty raw -echo -opost; printf '\\033[6n'; head -c ${flood} /dev/zero; read x`), { retainBytes: 65536 });
  run.conn(0).close();
  await run.until('conn 0 let go', () => run.detachedOf(0) !== undefined);
  // The program floods 20 MB with nobody attached, then waits in read for the answer nobody gives.
  let state = await run.query();
  while (state.next < BigInt(4 + flood)) {
    assert.ok(state.next - state.oldest <= 65536n, 'never more than the ring');
    state = await run.query();
  }
  assert.equal([state.oldest, state.next, state.programDone], [BigInt(4 + flood - 65536), BigInt(4 + flood), false]);
  const status = readFileSync(`/proc/${run.child.pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]);
  assert.ok(rss < 16 * 1024, `helper RSS ${rss} kB: the ring, not the flood`);
  // The helper still answers: an observer and a controller attach from now, and leave again.
  const watcher = run.attach(1, 'observe', FROM_NOW);
  await run.until('ATTACHED', () => watcher.attached !== undefined);
  assert.is(watcher.attached!.next, BigInt(4 + flood));
  const controller = run.attach(2, 'control', FROM_NOW);
  await run.until('ATTACHED', () => controller.attached !== undefined);
  watcher.close();
  controller.close();
  await run.until('both let go', () => run.detachedOf(1) !== undefined && run.detachedOf(2) !== undefined);
  run.terminate();
  const ended = await run.ended;
  assert.is(ended.end?.reason, 'terminated');
  assert.is(watcher.received + controller.received, 0, 'nothing new was written');
});

test('a conn number is free again once its DETACHED is sent: 600 attach and detach cycles on one session, each with conn 1 and a whole replay (REVIEW-3)', async () => {
  await withData(4096, async (path, data) => {
    const run = new KeptRun(catThenWait(path));
    const c0 = run.conn(0);
    await run.until('the program\'s output', () => c0.position === BigInt(data.length));
    c0.close();
    await run.until('conn 0 let go', () => run.detachedOf(0) !== undefined);
    for (let cycle = 1; cycle <= 600; cycle++) {
      const role = cycle % 2 === 0 ? 'control' : 'observe';
      const c = run.attach(1, role, 0n);
      await run.until(`cycle ${cycle}'s replay`, () => c.position === BigInt(data.length) || c.detached !== undefined);
      assert.is(c.detached, undefined, `cycle ${cycle} was refused: ${JSON.stringify(c.detached)}`);
      assert.ok(c.output.equals(data), `cycle ${cycle}: the replay is the program's bytes`);
      c.close();
      await run.until(`cycle ${cycle}'s DETACHED`, () => c.detached !== undefined);
      assert.equal([c.detached!.reason, c.detached!.code], ['client-gone', 0], `cycle ${cycle}`);
    }
    const last = run.attach(2, 'control', FROM_NOW);
    await run.until('the last ATTACHED', () => last.attached !== undefined);
    last.send(input('\n'));
    const ended = await run.ended;
    assert.is(ended.end?.reason, 'exit');
  });
});

test('--keep needs a session id and version 3; its options mean nothing without it and are bounded (usage, exit 2)', async () => {
  const cases = [
    ['--protocol=3', '--keep'],
    ['--protocol=2', '--keep', '--session-id=7'],
    ['--protocol=3', '--retain-bytes=65536'],
    ['--protocol=3', '--keep', '--session-id=7', '--retain-bytes=4095'],
    ['--protocol=3', '--keep', '--session-id=7', '--retain-bytes', '67108865'],
    ['--protocol=3', '--keep', '--session-id=7', '--max-observers=17'],
    ['--protocol=3', '--keep', '--session-id=9007199254740992'],
    ['--protocol=3', '--keep', '--session-id=0'],
    ['--protocol=3', '--keep', '--session-id'],
  ];
  for (const options of cases) {
    const ended = await new HelperRun(['24', '80', 'true'], { options, go: false }).ended;
    assert.is(ended.code, 2, options.join(' '));
    assert.match(ended.report!.text, 'usage: opencode-pty-session', options.join(' '));
  }
});

test.run();
