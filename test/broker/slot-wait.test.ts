// A start that finds every session slot held waits for one that is finishing or stopping (connection.ts's
// waitForSlot over session-slots.ts), against the connection fakes: when it waits, what ends the
// wait (the slot, its bound, shutdown, its own client's hang-up), and who gets the slot.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serveConnection, type HandOffWorker } from '../../src/broker/connection.ts';
import { refuseSocket } from '../../src/broker/refuse.ts';
import { SessionSlots } from '../../src/broker/session-slots.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { ErrorCode } from '../../src/protocol/index.ts';
import { deferred } from '../support/deferred.ts';
import { eachTurnUntil } from '../support/wait.ts';
import { connect, fakeBroker, types } from './connection-fakes.ts';

/** Session slots, all `max` of them held by sessions running (returned), and the moment a start waits. */
function fullSlots(max: number) {
  const slots = new SessionSlots(max);
  const held = Array.from({ length: max }, () => slots.tryTake()!);
  const waits = deferred<void>();
  const take = slots.take.bind(slots);
  slots.take = (until, settleMs, owner) => {
    const taken = take(until, settleMs, owner);
    if (slots.waiting > 0) waits.resolve();
    return taken;
  };
  return { slots, held, waited: waits.promise };
}

test('every slot held and one finishing: the start waits, and gets WELCOME and its hand-off once that slot is released', async () => {
  const { slots, held, waited } = fullSlots(2);
  held[1]!.finishing();
  const { deps, seen, handed } = fakeBroker(undefined, 2000, slots);
  const { server, client, peer } = connect();
  try {
    const served = serveConnection(server, peer, 'ordinary', Date.now(), deps);
    assert.is(await Promise.race([waited.then(() => 'waits'), served.then(() => 'answered')]), 'waits', 'the start waits for the finishing slot');
    assert.equal(client.frames, [], 'nothing is answered while the slot finishes');
    assert.is(seen.takes, 0);
    held[1]!.release();
    await served;
    await client.closed();
    assert.equal(types(client.frames), ['welcome']);
    assert.equal([handed.length, seen.adopted], [1, 1]);
    assert.equal([slots.used, slots.finishing, slots.waiting], [2, 0, 0], 'the finishing session\'s slot is the new session\'s now');
  } finally {
    client.close();
  }
});

test('every slot held and none finishing: SESSION_LIMIT at once, nothing waits', async () => {
  const { slots } = fullSlots(1);
  const { deps, seen } = fakeBroker(undefined, 2000, slots);
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed();
    assert.equal(types(client.frames), [`error ${ErrorCode.SESSION_LIMIT}`]);
    assert.equal([seen.takes, seen.admissionReleased, slots.used, slots.waiting], [0, 1, 1, 0]);
    assert.match(seen.notes.join('\n'), /session limit reached \(1\)/, 'the limit is named, for the line a node-pty caller sees');
  } finally {
    client.close();
  }
});

test('a finishing slot that takes too long: SESSION_LIMIT at the slot-wait bound, not HANDSHAKE_TIMEOUT (the deadline is paused while it waits)', async () => {
  const { slots, held, waited } = fullSlots(1);
  held[0]!.finishing();
  const { deps, seen } = fakeBroker(undefined, 200, slots, 400);
  const { server, client, peer } = connect();
  try {
    const acceptedAt = Date.now();
    const served = serveConnection(server, peer, 'ordinary', acceptedAt, deps);
    assert.is(await Promise.race([waited.then(() => 'waits'), served.then(() => 'answered')]), 'waits');
    await served;
    await client.closed();
    assert.equal(types(client.frames), [`error ${ErrorCode.SESSION_LIMIT}`], 'refused as before, not HANDSHAKE_TIMEOUT');
    assert.ok(Date.now() - acceptedAt >= 400, `waited ${Date.now() - acceptedAt} ms`);
    assert.equal([seen.takes, seen.admissionReleased, slots.waiting], [0, 1, 0]);
    held[0]!.release();
    assert.is(slots.used, 0, 'the slot is free once released: the refused start took nothing');
  } finally {
    client.close();
  }
});

test("16 means 16: a stopping session that takes longer than the whole handshake deadline still gives its slot to the start that waits, with the client's time left for START", async () => {
  const { slots, held, waited } = fullSlots(2);
  held[0]!.finishing();
  let deadlineMs = 0;
  const { deps, seen } = fakeBroker(undefined, 200, slots, 5000);
  const { server, client, peer } = connect();
  try {
    const acceptedAt = Date.now();
    const take = deps.takeWorker;
    deps.takeWorker = async () => {
      const worker = await take();
      return { ...worker, handOff: (...args: Parameters<HandOffWorker['handOff']>) => ((deadlineMs = args[4]), worker.handOff(...args)) };
    };
    const served = serveConnection(server, peer, 'ordinary', acceptedAt, deps);
    assert.is(await Promise.race([waited.then(() => 'waits'), served.then(() => 'answered')]), 'waits');
    // Three times the handshake deadline, as a unit whose programs ignore SIGHUP and SIGTERM takes.
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(client.frames, [], 'still waiting, not refused');
    held[0]!.release();
    await served;
    await client.closed();
    assert.equal(types(client.frames), ['welcome']);
    assert.is(seen.adopted, 1);
    assert.ok(Date.now() - acceptedAt >= 600);
    assert.ok(deadlineMs > 100 && deadlineMs <= 200, `the worker gets the client's own time left: ${deadlineMs} ms`);
  } finally {
    client.close();
  }
});

test('a kill() then spawn(): the start finds no slot finishing yet (the STOP is on its way) and watches settleMs for it, then waits for that slot', async () => {
  const { slots, held } = fullSlots(1);
  const { deps, seen } = fakeBroker(undefined, 2000, slots, 2000, 500);
  const { server, client, peer } = connect();
  try {
    const served = serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await eachTurnUntil(() => slots.watching === 1, 2000, 'the start to watch for a finishing slot');
    // The STOP reaches the broker (the worker's 'finishing'), then the unit is gone.
    held[0]!.finishing();
    held[0]!.release();
    await served;
    await client.closed();
    assert.equal(types(client.frames), ['welcome']);
    assert.is(seen.adopted, 1);
  } finally {
    client.close();
  }
});

test('shutdown while a start waits for a finishing slot: SHUTDOWN at once, and the start takes nothing', async () => {
  const { slots, held, waited } = fullSlots(1);
  held[0]!.finishing();
  const { deps, seen } = fakeBroker(undefined, 2000, slots);
  const { server, client, peer } = connect();
  try {
    const served = serveConnection(server, peer, 'ordinary', Date.now(), deps);
    assert.is(await Promise.race([waited.then(() => 'waits'), served.then(() => 'answered')]), 'waits');
    // What Broker.shutdown does to every connection in its handshake.
    refuseSocket(server, ErrorCode.SHUTDOWN, 'supervisor is shutting down');
    await served;
    await client.closed();
    assert.equal(types(client.frames), [`error ${ErrorCode.SHUTDOWN}`]);
    assert.equal([seen.takes, seen.admissionReleased, slots.waiting], [0, 1, 0]);
    held[0]!.release();
    assert.is(slots.used, 0);
  } finally {
    client.close();
  }
});

test('a client that closes while it waits for a finishing slot: its wait ends with it, and its slot goes to nobody', async () => {
  const { slots, held, waited } = fullSlots(1);
  held[0]!.finishing();
  const { deps, seen } = fakeBroker(undefined, 2000, slots);
  const { server, client, peer } = connect();
  const served = serveConnection(server, peer, 'ordinary', Date.now(), deps);
  assert.is(await Promise.race([waited.then(() => 'waits'), served.then(() => 'answered')]), 'waits');
  client.close();
  // The broker notices the peer gone only when it closes or writes: the release writes WELCOME.
  held[0]!.release();
  await served;
  assert.ok(server.closed);
  assert.equal([seen.takes, seen.adopted, seen.admissionReleased], [0, 0, 1]);
  assert.equal([slots.used, slots.waiting], [0, 0], 'the slot handed to the gone client is freed again');
});

test('a waiter whose client has gone (HELLO, then close) does not keep a live start from waiting for the finishing slot', async () => {
  const slots = new SessionSlots(1);
  const held = slots.tryTake()!;
  held.finishing();
  // A wait bounded at 60 s, so only the hang-up can end the gone one's within 2 s.
  const { deps } = fakeBroker(undefined, 60_000, slots, 60_000);
  // The gone one: HELLO and close, before the broker reads anything.
  const gone = connect(false);
  const goneServed = serveConnection(gone.server, gone.peer, 'ordinary', Date.now(), deps);
  await eachTurnUntil(() => slots.waiting === 1, 2000, 'the first start to wait for the finishing slot');
  closeQuietly(gone.clientFd);
  // Its hang-up reaches the broker's event loop: its wait ends, and its place with it.
  await eachTurnUntil(() => slots.waiting === 0, 2000, "the gone client's wait to end");
  const live = connect();
  try {
    const liveServed = serveConnection(live.server, live.peer, 'ordinary', Date.now(), deps);
    await eachTurnUntil(() => slots.waiting === 1, 2000, 'the live start to wait for the finishing slot');
    held.release();
    await Promise.all([goneServed, liveServed]);
    await live.client.closed();
    assert.equal(types(live.client.frames), ['welcome'], 'the live start waits behind no dead connection and gets the slot');
  } finally {
    live.client.close();
  }
});

test("every slot held by the agent's other processes: the MainPID's start takes the slot kept for it, once it is confirmed", async () => {
  const { slots } = fullSlots(1);
  const { deps, handed } = fakeBroker(undefined, 2000, slots);
  const confirmed: number[] = [];
  const { server, client, peer } = connect();
  deps.mainPid = { hint: () => peer.credentials.pid, confirm: async (who) => (confirmed.push(who.credentials.pid), true) };
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed();
    assert.equal(types(client.frames), ['welcome']);
    assert.equal([handed.length, confirmed], [1, [peer.credentials.pid]]);
    assert.not.ok(slots.reserveOpen, 'the session holds the reserved slot');
  } finally {
    client.close();
  }
});

test('a peer the look does not confirm as the MainPID is refused at the limit, the reserved slot left free', async () => {
  const { slots } = fullSlots(1);
  const { deps } = fakeBroker(undefined, 2000, slots);
  const { server, client, peer } = connect();
  deps.mainPid = { hint: () => undefined, confirm: async () => false };
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed();
    assert.equal(types(client.frames), [`error ${ErrorCode.SESSION_LIMIT}`]);
    assert.ok(slots.reserveOpen);
  } finally {
    client.close();
  }
});

test.run();
