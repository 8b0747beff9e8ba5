// Session slots (session-slots.ts): taken at once while free; with every slot held, a start waits only
// for a slot whose session is finishing, gets the next one released, first come first served, and is
// refused when nothing it could get is finishing any more or its wait is given up.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionSlots, type SessionSlot } from '../../src/broker/session-slots.ts';

/** `count` slots taken from `slots`, every one of them. */
function takeAll(slots: SessionSlots, count: number): SessionSlot[] {
  return Array.from({ length: count }, () => slots.tryTake()!);
}

/** What a promise has come to by now (microtasks run): its value, or 'pending'. */
async function now<T>(promise: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

const never = () => new AbortController().signal;

test('slots are taken at once while free, and each is released once', () => {
  const slots = new SessionSlots(2);
  const [a] = takeAll(slots, 2);
  assert.is(slots.tryTake(), undefined);
  a!.release();
  a!.release();
  assert.is(slots.used, 1, 'a second release of the same slot frees nothing');
  assert.ok(slots.tryTake());
  assert.is(slots.used, 2);
});

test('with every slot held and none finishing, a start is refused at once and nothing waits', async () => {
  const slots = new SessionSlots(1);
  takeAll(slots, 1);
  assert.is(await now(slots.take(never())), undefined);
  assert.is(slots.waiting, 0);
});

test('a start waits for the finishing slot and gets it on its release; the slot passes on, never free between', async () => {
  const slots = new SessionSlots(2);
  const [a, b] = takeAll(slots, 2);
  b!.finishing();
  assert.is(slots.finishing, 1);
  const waited = slots.take(never());
  assert.is(await now(waited), 'pending');
  assert.is(slots.waiting, 1);
  b!.release();
  const slot = await now(waited);
  assert.ok(slot && slot !== 'pending', 'the released slot went to the waiter');
  assert.equal([slots.used, slots.finishing, slots.waiting], [2, 0, 0]);
  assert.is(slots.tryTake(), undefined, 'nobody else got it meanwhile');
  a!.release();
  (slot as SessionSlot).release();
  assert.is(slots.used, 0);
});

test('a free slot is taken by take() as by tryTake()', async () => {
  const slots = new SessionSlots(1);
  assert.ok(await now(slots.take(never())));
  assert.is(slots.used, 1);
});

test('first come, first served; no more waiters than slots finishing', async () => {
  const slots = new SessionSlots(3);
  const [a, b, c] = takeAll(slots, 3);
  a!.finishing();
  b!.finishing();
  const first = slots.take(never());
  const second = slots.take(never());
  assert.is(await now(slots.take(never())), undefined, 'a third start has nothing to wait for');
  assert.is(slots.waiting, 2);
  b!.release();
  assert.ok(await now(first));
  assert.is(await now(second), 'pending');
  a!.release();
  assert.ok(await now(second));
  assert.equal([slots.used, slots.finishing, slots.waiting], [3, 0, 0]);
  c!.release();
  assert.is(slots.used, 2);
});

test('a slot released that was not finishing goes to the first waiter; the next still waits for its own', async () => {
  const slots = new SessionSlots(3);
  const [a, b, c] = takeAll(slots, 3);
  a!.finishing();
  b!.finishing();
  const first = slots.take(never());
  const second = slots.take(never());
  // c is released without finishing first (a start given up before its hand-off, a worker that died
  // mid-session): the first waiter gets it; a and b still finish, so the second waits on.
  c!.release();
  assert.ok(await now(first));
  assert.is(await now(second), 'pending');
  assert.equal([slots.used, slots.finishing, slots.waiting], [3, 2, 1]);
  a!.release();
  assert.ok(await now(second));
  b!.release();
  assert.equal([slots.used, slots.finishing, slots.waiting], [2, 0, 0]);
});

test('a wait given up (its deadline, its connection closed) takes nothing, and a later release frees the slot', async () => {
  const slots = new SessionSlots(1);
  const [a] = takeAll(slots, 1);
  a!.finishing();
  const stop = new AbortController();
  const waited = slots.take(stop.signal);
  stop.abort();
  assert.is(await now(waited), undefined);
  assert.is(slots.waiting, 0);
  a!.release();
  assert.equal([slots.used, slots.finishing], [0, 0]);
});

test('finishing counts once per slot, and not after its release', () => {
  const slots = new SessionSlots(2);
  const [a, b] = takeAll(slots, 2);
  a!.finishing();
  a!.finishing();
  assert.is(slots.finishing, 1);
  b!.release();
  b!.finishing();
  assert.is(slots.finishing, 1);
  a!.release();
  assert.equal([slots.used, slots.finishing], [0, 0]);
});

test('settle: a start that finds no finishing slot watches a while; a STOP arriving meanwhile lets it wait for that slot', async () => {
  const slots = new SessionSlots(1);
  const [held] = takeAll(slots, 1);
  const taken = slots.take(never(), 1000);
  assert.is(slots.watching, 1);
  assert.is(slots.waiting, 0, 'watching is not waiting: no finishing slot is counted on');
  held!.finishing();
  await Promise.resolve();
  await Promise.resolve();
  assert.equal([slots.watching, slots.waiting], [0, 1], 'the STOP came: it waits for that slot');
  held!.release();
  const slot = await taken;
  assert.ok(slot, 'the stopped session\'s slot is its');
  assert.equal([slots.used, slots.finishing], [1, 0]);
});

test('settle: nothing turns finishing within the window: refused then, nothing held, nothing watching', async () => {
  const slots = new SessionSlots(1);
  takeAll(slots, 1);
  const started = Date.now();
  assert.is(await slots.take(never(), 50), undefined);
  assert.ok(Date.now() - started >= 45, `refused after ${Date.now() - started} ms`);
  assert.equal([slots.used, slots.waiting, slots.watching], [1, 0, 0]);
});

test('settle: a slot released meanwhile is taken; an abort ends the watch at once', async () => {
  const slots = new SessionSlots(1);
  const [held] = takeAll(slots, 1);
  const taken = slots.take(never(), 1000);
  held!.release();
  assert.ok(await taken);
  assert.is(slots.used, 1);
  const stop = new AbortController();
  const refused = slots.take(stop.signal, 10_000);
  stop.abort();
  assert.is(await refused, undefined);
  assert.is(slots.watching, 0);
});

test('settle: one STOP, two watchers: one waits for that slot, the other is refused (never more waiters than finishing)', async () => {
  const slots = new SessionSlots(1);
  const [held] = takeAll(slots, 1);
  const first = slots.take(never(), 1000);
  const second = slots.take(never(), 1000);
  held!.finishing();
  assert.is(await second, undefined);
  assert.is(slots.waiting, 1);
  held!.release();
  assert.ok(await first);
});

test('settle: two kill() then two spawn(): a watcher woken by the first STOP that another watcher took keeps watching its own window, so the second STOP still counts for it', async () => {
  const slots = new SessionSlots(2);
  const [a, b] = takeAll(slots, 2);
  const first = slots.take(never(), 1000);
  const second = slots.take(never(), 1000);
  a!.finishing();
  assert.is(await now(second), 'pending', 'its window is not over: the second STOP may be on its way');
  assert.equal([slots.waiting, slots.watching], [1, 1]);
  b!.finishing();
  assert.equal([slots.waiting, slots.watching], [2, 0], 'the second STOP: it waits for that slot');
  a!.release();
  b!.release();
  assert.ok(await first);
  assert.ok(await second, 'both starts get a slot: 16 means 16 with two removals at once');
  assert.equal([slots.used, slots.finishing, slots.waiting], [2, 0, 0]);
});

test('settle: one slot freed, two watchers: the first takes it, the other keeps watching and takes the next one freed within its window', async () => {
  const slots = new SessionSlots(2);
  const [a, b] = takeAll(slots, 2);
  const first = slots.take(never(), 1000);
  const second = slots.take(never(), 1000);
  a!.release();
  assert.ok(await first);
  assert.is(await now(second), 'pending');
  b!.release();
  assert.ok(await second);
  assert.equal([slots.used, slots.watching], [2, 0]);
});

test('settle: a slot that was not finishing, released to the waiter, leaves the finishing one for a watcher at once (not at its window\'s end)', async () => {
  const slots = new SessionSlots(2);
  const [a, b] = takeAll(slots, 2);
  a!.finishing();
  const first = slots.take(never());
  const second = slots.take(never(), 1000);
  assert.equal([slots.waiting, slots.watching], [1, 1], 'the one finishing slot is counted on by the first');
  // A start that took a slot and failed before its hand-off gives it back without finishing.
  b!.release();
  assert.ok(await first);
  assert.equal([slots.waiting, slots.watching], [1, 0], 'the finishing slot is nobody\'s now: the watcher waits for it');
  a!.release();
  assert.ok(await second);
});

test('settle: a waiter that gives up leaves its finishing slot to a watcher at once', async () => {
  const slots = new SessionSlots(1);
  const [a] = takeAll(slots, 1);
  a!.finishing();
  const gone = new AbortController();
  const first = slots.take(gone.signal);
  const second = slots.take(never(), 1000);
  assert.equal([slots.waiting, slots.watching], [1, 1]);
  gone.abort();
  assert.is(await first, undefined);
  assert.equal([slots.waiting, slots.watching], [1, 0], 'the watcher counts on the finishing slot now');
  a!.release();
  assert.ok(await second);
});

test("the MainPID's reserved slot: open only with every slot held and some of them other processes', one at a time, never handed to a waiter", async () => {
  const slots = new SessionSlots(2);
  assert.not.ok(slots.reserveOpen, 'not while a slot is free');
  assert.is(slots.tryTakeReserved(), undefined);
  const child = slots.tryTake('other')!;
  const main = slots.tryTake('main')!;
  assert.ok(slots.reserveOpen, "every slot held, one a child's");
  const reserved = slots.tryTakeReserved()!;
  assert.ok(reserved);
  assert.not.ok(slots.reserveOpen, 'one reserved slot');
  assert.is(slots.tryTakeReserved(), undefined);
  assert.is(slots.used, 2, 'the reserved slot is not one of the limit');
  // A waiter counts on a finishing ordinary slot; the reserved one coming free is not given to it.
  child.finishing();
  const waiter = slots.take(never());
  reserved.release();
  reserved.release();
  assert.is(await now(waiter), 'pending', 'the reserved slot went to nobody else');
  assert.ok(slots.reserveOpen, 'open again once released (once)');
  child.release();
  const handed = await waiter;
  assert.ok(handed);
  main.release();
  handed!.release();
  assert.is(slots.used, 0);
});

test('the MainPID alone never holds more than the limit: no reserved slot when every held slot is its own', async () => {
  const slots = new SessionSlots(2);
  const held = [slots.tryTake('main')!, slots.tryTake('main')!];
  assert.not.ok(slots.reserveOpen);
  assert.is(slots.tryTakeReserved(), undefined);
  // One of its own given back and a child's taken instead: open again, and with it taken the MainPID
  // holds two, the limit, so nothing more opens for it.
  held[0]!.release();
  const child = slots.tryTake('other')!;
  const reserved = slots.tryTakeReserved()!;
  assert.ok(reserved);
  reserved.release();
  // A slot handed on from a finishing one keeps its waiter's owner.
  child.finishing();
  const waiter = slots.take(never(), 0, 'main');
  child.release();
  const mine = (await waiter)!;
  assert.not.ok(slots.reserveOpen, 'both held slots are the MainPID\'s now');
  mine.release();
  held[1]!.release();
});

test.run();
