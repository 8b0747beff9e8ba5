// A kept session's roles and refusals against the helper's real binary: one controller and observers,
// the hand-over (CONTROLLER_CHANGED, the demoted connection's input refused), the observer cap, offsets
// past the ring's next byte, and ATTACH messages that break the control channel's rules.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { encodeAttach } from '../../src/control/helper-channel.ts';
import { input, resize, sh, signal } from './helper-harness.ts';
import { FROM_NOW, KeptRun } from './keep-harness.ts';

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

// Reads lines in raw mode: "size" prints the terminal's size, "q" ends with status 0.
const LOOP = 'stty raw -echo -opost; printf ready; while read line; do case "$line" in size) stty size;; q) exit 0;; *) printf "got %s\\n" "$line";; esac; done';

test('an observer beside the controller gets the same bytes, live', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'helper-keep-'));
  try {
    const data = Buffer.alloc(1 << 20);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 11)) & 0xff;
    writeFileSync(join(dir, 'data'), data);
    const run = new KeptRun(sh(`stty raw -echo -opost; printf ready; read x; cat ${join(dir, 'data')}; read y`));
    const c0 = run.conn(0);
    await run.until('ready', () => c0.output.toString() === 'ready');
    const c1 = run.attach(1, 'observe', 0n);
    await run.until('ATTACHED', () => c1.position === 5n);
    c0.send(input('\n'));
    const end = BigInt(5 + data.length);
    await run.until('all of it on both', () => c0.position === end && c1.position === end);
    assert.is(sha(c0.output), sha(c1.output));
    assert.is(sha(c1.output.subarray(5)), sha(data));
    assert.equal([c1.attached!.role, c1.attached!.generation, c1.attached!.id, c1.attached!.unit], [2, 1, 42n, 'pty-keep.service']);
    assert.ok(c1.attached!.programPid > 1 && c1.attached!.mainPid === run.child.pid);
    c0.send(input('\n'));
    const ended = await run.ended;
    assert.is(ended.end?.reason, 'exit');
    assert.equal([run.detachedOf(0)?.reason, run.detachedOf(1)?.reason], ['ending', 'ending']);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('ATTACH control: the new controller sets the size, the others are told CONTROLLER_CHANGED; a demoted INPUT and an observer\'s RESIZE are refused NOT_CONTROLLER, the session goes on', async () => {
  const run = new KeptRun(sh(LOOP));
  const c0 = run.conn(0);
  await run.until('ready', () => c0.output.toString() === 'ready');
  const c1 = run.attach(1, 'observe', FROM_NOW);
  await run.until('ATTACHED', () => c1.attached !== undefined);
  const c2 = run.attach(2, 'control', FROM_NOW, { rows: 30, cols: 100 });
  await run.until('the change told', () => c0.events.length === 1 && c1.events.length === 1 && c2.attached !== undefined);
  assert.equal(c0.events, [{ type: 'changed', generation: 2, role: 2 }]);
  assert.equal(c1.events, [{ type: 'changed', generation: 2, role: 2 }]);
  assert.equal([c2.attached!.role, c2.attached!.generation], [1, 2]);
  assert.equal(c2.events, [], 'the new controller learns the generation from ATTACHED');
  c2.send(input('size\n'));
  await run.until('the size', () => c2.output.toString().includes('30 100\n'));
  assert.ok(c0.output.toString().endsWith('30 100\n'), 'the demoted controller still sees the output');
  c0.send(input('typed by the old controller\n'));
  await run.until('conn 0 refused', () => run.detachedOf(0) !== undefined);
  assert.equal([run.detachedOf(0)!.reason, run.detachedOf(0)!.code], ['protocol', 14]);
  assert.match(run.detachedOf(0)!.text, 'INPUT from a connection that is not the controller');
  c1.send(resize(10, 10));
  await run.until('conn 1 refused', () => run.detachedOf(1) !== undefined);
  assert.equal([run.detachedOf(1)!.reason, run.detachedOf(1)!.code], ['protocol', 14]);
  c2.send(input('size\n'));
  await run.until('the size again', () => c2.output.toString().split('30 100\n').length === 3);
  assert.not.ok(c2.output.toString().includes('typed by'), 'the refused input never reached the program');
  const state = await run.query();
  assert.equal([state.controller, state.observers, state.generation], [2, 0, 2]);
  c2.send(input('q\n'));
  const ended = await run.ended;
  assert.is(ended.end?.reason, 'exit');
  assert.equal(run.detachedOf(2)?.reason, 'ending');
});

test('observers may not signal or stop either; the N+1th observer is refused OBSERVER_LIMIT and written nothing, a new controller still comes in', async () => {
  const run = new KeptRun(sh(LOOP), { maxObservers: 1 });
  const c0 = run.conn(0);
  await run.until('ready', () => c0.output.toString() === 'ready');
  const c1 = run.attach(1, 'observe', 0n);
  const c2 = run.attach(2, 'observe', 0n);
  await run.until('conn 2 refused', () => run.detachedOf(2) !== undefined && c2.eof);
  assert.equal([run.detachedOf(2)!.reason, run.detachedOf(2)!.code, run.detachedOf(2)!.remainder.length], ['refused', 17, 0]);
  assert.is(c2.position, undefined, 'not even ATTACHED');
  await run.until('conn 1 replayed', () => c1.position === 5n);
  const c3 = run.attach(3, 'control', FROM_NOW);
  await run.until('ATTACHED', () => c3.attached !== undefined);
  const state = await run.query();
  assert.equal([state.controller, state.observers, state.generation], [3, 2, 2], 'the demoted controller observes beyond the cap');
  c1.send(signal(2));
  c0.send(Buffer.from([0x09, 0, 0, 0, 0])); // STOP
  await run.until('both refused', () => run.detachedOf(1) !== undefined && run.detachedOf(0) !== undefined);
  assert.equal([run.detachedOf(1)!.code, run.detachedOf(0)!.code], [14, 14]);
  c3.send(input('q\n'));
  assert.is((await run.ended).end?.reason, 'exit');
});

test('an observer the ring overtakes is let go with FLOW; the controller and the program never wait for it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'helper-keep-'));
  try {
    const data = Buffer.alloc(1 << 20, 0x61);
    writeFileSync(join(dir, 'data'), data);
    const run = new KeptRun(sh(`stty raw -echo -opost; printf ready; read x; cat ${join(dir, 'data')}; read y`), { retainBytes: 65536 });
    const c0 = run.conn(0);
    await run.until('ready', () => c0.output.toString() === 'ready');
    const slow = run.attach(1, 'observe', FROM_NOW);
    await run.until('ATTACHED', () => slow.attached !== undefined);
    slow.socket.pauseReading();
    c0.send(input('\n'));
    await run.until('the controller has it all', () => c0.position === BigInt(5 + data.length));
    await run.until('the observer let go', () => run.detachedOf(1) !== undefined);
    assert.equal([run.detachedOf(1)!.reason, run.detachedOf(1)!.code], ['flow', 9]);
    // The controller had everything from its cursor on (or TRUNCATED where the unpaced program outran
    // it: the harness checks every offset), while the observer, paused, held nothing back.
    assert.ok(c0.received + c0.events.reduce((sum, e) => sum + (e.type === 'truncated' ? Number(e.dropped) : 0), 0) === 5 + data.length);
    assert.ok(slow.received <= 262144, 'the observer got no more than its credit');
    c0.send(input('\n'));
    assert.is((await run.ended).end?.reason, 'exit');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('the write timeout ends that connection only (DETACHED flow), never the session', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'helper-keep-'));
  try {
    writeFileSync(join(dir, 'data'), Buffer.alloc(1 << 20, 0x62));
    const run = new KeptRun(sh(`stty raw -echo -opost; printf ready; read x; cat ${join(dir, 'data')}; read y`), { writeTimeoutMs: 300 });
    const c0 = run.conn(0);
    await run.until('ready', () => c0.output.toString() === 'ready');
    const stuck = run.attach(1, 'observe', FROM_NOW);
    await run.until('ATTACHED', () => stuck.attached !== undefined);
    // It has credit, more than its socket holds, and does not read: withholding credit alone would
    // never be a fault (docs/protocol.md "Flow control").
    stuck.socket.pauseReading();
    stuck.grant(4 << 20);
    c0.send(input('\n'));
    await run.until('the stuck one let go', () => run.detachedOf(1) !== undefined);
    assert.equal([run.detachedOf(1)!.reason, run.detachedOf(1)!.code], ['flow', 9]);
    assert.match(run.detachedOf(1)!.text, 'did not read its output within the write timeout');
    await run.until('the controller has it all', () => c0.position === BigInt(5 + (1 << 20)));
    c0.send(input('\n'));
    assert.is((await run.ended).end?.reason, 'exit');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('TERMINATE with connections attached: DETACHED(ending) for each, then END terminated with no remainder', async () => {
  const run = new KeptRun(sh(LOOP));
  const c0 = run.conn(0);
  await run.until('ready', () => c0.output.toString() === 'ready');
  const c1 = run.attach(1, 'observe', 0n);
  await run.until('replayed', () => c1.position === 5n);
  run.terminate();
  const ended = await run.ended;
  assert.equal([ended.end?.reason, ended.end?.remainder.length], ['terminated', 0]);
  assert.equal([run.detachedOf(0)?.reason, run.detachedOf(1)?.reason], ['ending', 'ending']);
  const types = run.messages.map((m) => m.type).filter((t) => t !== 'log');
  assert.equal(types.slice(-4), ['detached', 'detached', 'figures', 'end']);
});

test('ATTACH before GO (the session still starting) is refused SESSION_STATE; STOP from the controller is the worker\'s to act on, and the end then says stop', async () => {
  const run = new KeptRun(sh(LOOP), { go: false });
  await run.until('PID', () => run.messages.some((m) => m.type === 'pid'));
  run.attach(1, 'observe', 0n);
  await run.until('refused', () => run.detachedOf(1) !== undefined);
  assert.equal([run.detachedOf(1)!.reason, run.detachedOf(1)!.code], ['refused', 18]);
  run.go();
  const c0 = run.conn(0);
  await run.until('ready', () => c0.output.toString() === 'ready');
  c0.send(Buffer.from([0x09, 0, 0, 0, 0])); // STOP
  await run.until('STOP to the worker', () => run.messages.some((m) => m.type === 'stop'));
  // As the worker's stop would: the program is ended from outside.
  process.kill(c0.started!.readUInt32BE(0), 'SIGKILL');
  const ended = await run.ended;
  assert.is(ended.end?.reason, 'stop');
  assert.equal(run.detachedOf(0)?.reason, 'ending');
});

test('offsets: past next, at 2^63 and just below FROM_NOW are refused BAD_OFFSET; next itself and FROM_NOW start with the next byte', async () => {
  const run = new KeptRun(sh(LOOP));
  const c0 = run.conn(0);
  await run.until('ready', () => c0.output.toString() === 'ready');
  const bad = [6n, 1n << 63n, FROM_NOW - 1n];
  bad.forEach((offset, i) => run.attach(1 + i, 'observe', offset));
  await run.until('all refused', () => bad.every((_, i) => run.detachedOf(1 + i) !== undefined));
  for (let i = 0; i < bad.length; i++) assert.equal([run.detachedOf(1 + i)!.reason, run.detachedOf(1 + i)!.code], ['refused', 16], String(bad[i]));
  const atNext = run.attach(4, 'observe', 5n);
  const now = run.attach(5, 'observe', FROM_NOW);
  await run.until('both ATTACHED', () => atNext.attached !== undefined && now.attached !== undefined);
  assert.equal([atNext.attached!.next, now.attached!.next], [5n, 5n]);
  c0.send(input('hi\n'));
  await run.until('live output on both', () => atNext.output.toString() === 'got hi\n' && now.output.toString() === 'got hi\n');
  c0.send(input('q\n'));
  assert.is((await run.ended).end?.reason, 'exit');
});

test('ATTACH without its fd, or with two, breaks the channel: the session ends, and every fd that came is closed', async () => {
  for (const fds of [0, 2]) {
    const run = new KeptRun(sh(LOOP));
    const c0 = run.conn(0);
    await run.until('ready', () => c0.output.toString() === 'ready');
    const pairs = Array.from({ length: fds }, () => native().socketpair());
    run.decoder.attached(1);
    run.control.write(encodeAttach({ conn: 1, role: 'observe', fromOffset: 0n, rows: 24, cols: 80 }), pairs.map(([, theirs]) => theirs));
    const ended = await run.ended;
    assert.is(ended.end?.reason, 'terminated', `${fds} fds`);
    // The helper is gone, and so is every copy of what it got: our ends read EOF.
    const eofs = pairs.map(([ours]) => new Promise<number>((resolve) => {
      const socket = new FdSocket(ours);
      let bytes = 0;
      socket.on('error', () => resolve(-1));
      socket.once('end', () => {
        socket.close();
        resolve(bytes);
      });
      socket.startReading((chunk) => (bytes += chunk.length));
    }));
    assert.equal(await Promise.all(eofs), pairs.map(() => 0));
  }
});

test.run();
