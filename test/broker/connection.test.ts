// One admitted connection's handshake (connection.ts) against fakes of the client service, the slots
// and the worker, over a real socketpair: what the client reads, and whether and when it is handed on,
// in the order of docs/architecture.md "The order of checks".
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ChildProcess } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { serveConnection, type ConnectionDeps, type HandOffWorker } from '../../src/broker/connection.ts';
import type { PeerAtAccept } from '../../src/broker/accept-gate.ts';
import type { ClientService, Look, ServiceSnapshot } from '../../src/identity/client-service.ts';
import type { PeerIdentity } from '../../src/identity/peer.ts';
import { refuseSocket } from '../../src/broker/refuse.ts';
import { SessionSlots } from '../../src/broker/session-slots.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, encodeFrame, type Frame } from '../../src/protocol/index.ts';
import { FrameClient as Client } from '../frame-client.ts';
import { deferred } from '../deferred.ts';

const SERVICE = 'agent.service';
const CGROUP = `/system.slice/${SERVICE}`;

function snapshot(controlGroup: string): ServiceSnapshot {
  const state = { activeState: 'active', subState: 'running', mainPid: 7, controlGroup, invocationId: Buffer.alloc(16, 1) };
  return { state, error: undefined, readStartTicks: 2, readAt: 0 };
}

const inside = (controlGroup = CGROUP): Look => ({ inside: true, snapshot: snapshot(controlGroup) });
const outside: Look = { inside: false, snapshot: snapshot(CGROUP) };

/** A client service whose one answer (and its confirmation) the test decides. */
function service(answer: Look & { confirmed: Promise<Look> }): ConnectionDeps['clientService'] {
  return { service: SERVICE, containsProvisionally: async () => answer } satisfies Pick<ClientService, 'service' | 'containsProvisionally'>;
}

/** The broker's side, faked: what was noted, taken, released and handed on. `slots`: real session
 * slots to take from (else every take succeeds and is counted). */
function fakeBroker(clientService: ConnectionDeps['clientService'], handshakeTimeoutMs = 2000, slots?: SessionSlots, slotWaitMs = 2000, settleMs = 0) {
  const seen = { notes: [] as string[], takes: 0, slotsTaken: 0, slotsReleased: 0, admissionReleased: 0, shutdowns: 0, adopted: 0 };
  const handed: { peer: PeerIdentity; version: number }[] = [];
  const worker: HandOffWorker = {
    child: { pid: 4242 } as ChildProcess,
    handOff(_id, clientFd, pidfd, peer, _deadlineMs, version) {
      // A real handle takes both descriptors whatever happens.
      closeQuietly(clientFd);
      closeQuietly(pidfd);
      handed.push({ peer, version });
    },
    shutdown: () => void (seen.shutdowns += 1),
  };
  const deps: ConnectionDeps<HandOffWorker> = {
    handshakeTimeoutMs,
    slotWaitMs,
    settleMs,
    clientService,
    cgroupOf: () => CGROUP,
    admission: { release: () => void (seen.admissionReleased += 1) },
    slots: slots ?? {
      tryTake: () => ((seen.slotsTaken += 1), { finishing: () => undefined, release: () => void (seen.slotsReleased += 1) }),
      take: async () => undefined,
      max: 1,
    },
    refusals: { note: (_key, reason) => void seen.notes.push(reason) },
    takeWorker: async () => ((seen.takes += 1), worker),
    adopt: () => void (seen.adopted += 1),
    nextId: () => 1,
    log: () => undefined,
  };
  return { deps, seen, handed };
}

/** A connection whose client has sent HELLO (versions 1..2), admitted as this process. */
function connect(): { server: FdSocket; client: Client; peer: PeerAtAccept } {
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 2 });
  native().sendmsg(clientFd, hello, 0, hello.length);
  const credentials = { pid: process.pid, uid: 1500, gid: 1500 };
  const peer: PeerAtAccept = { credentials, pidfd: native().pidfdOpen(process.pid), cgroup: CGROUP, startTicks: 1 };
  return { server: new FdSocket(serverFd), client: new Client(clientFd), peer };
}

const types = (frames: Frame[]) => frames.map((frame) => (frame.type === 'error' ? `error ${frame.code}` : frame.type));

test('a provisional yes: WELCOME at once, no worker until the fresh look confirms, then the hand-off with its cgroup', async () => {
  const confirmation = deferred<Look>();
  const { deps, seen, handed } = fakeBroker(service({ ...inside('/old.slice/agent.service'), provisional: true, confirmed: confirmation.promise }));
  const { server, client, peer } = connect();
  try {
    const served = serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.frame('welcome');
    assert.is(seen.takes, 0, 'no worker is taken on a provisional yes');
    assert.is(seen.admissionReleased, 0, 'the admission slot is held until the look is confirmed');
    confirmation.resolve(inside());
    await served;
    await client.closed;
    assert.equal(types(client.frames), ['welcome']);
    assert.is(seen.takes, 1);
    assert.is(seen.adopted, 1);
    assert.is(handed.length, 1);
    assert.is(handed[0]!.peer.cgroup, CGROUP, 'the confirmed look\'s cgroup is handed on');
    assert.is(handed[0]!.version, 2);
    assert.equal([seen.admissionReleased, seen.slotsReleased], [1, 0], 'the session keeps its slot');
  } finally {
    client.close();
  }
});

test('a confirmed yes is final: the hand-off does not wait for `confirmed`', async () => {
  // A non-provisional look is its own confirmation; this fake's never settles, so any wait for it
  // would last until the client's deadline (HANDSHAKE_TIMEOUT, no hand-off).
  const { deps, seen, handed } = fakeBroker(service({ ...inside(), confirmed: new Promise<Look>(() => undefined) }));
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed;
    assert.equal(types(client.frames), ['welcome']);
    assert.is(handed.length, 1, 'handed off');
    assert.is(handed[0]!.peer.cgroup, CGROUP);
    assert.equal([seen.takes, seen.adopted, seen.admissionReleased, seen.slotsReleased], [1, 1, 1, 0]);
    assert.equal(seen.notes, []);
  } finally {
    client.close();
  }
});

test('a provisional yes the fresh look refuses: AUTHENTICATION after WELCOME, noted, no worker, both slots freed', async () => {
  const { deps, seen, handed } = fakeBroker(service({ ...inside(), provisional: true, confirmed: Promise.resolve(outside) }));
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed;
    assert.equal(types(client.frames), ['welcome', `error ${ErrorCode.AUTHENTICATION}`]);
    assert.equal([seen.takes, handed.length], [0, 0]);
    assert.match(seen.notes.join('\n'), /not inside agent\.service/);
    assert.equal([seen.admissionReleased, seen.slotsTaken, seen.slotsReleased], [1, 1, 1]);
  } finally {
    client.close();
  }
});

test('a confirmed no is refused before WELCOME and before a session slot', async () => {
  const { deps, seen } = fakeBroker(service({ ...outside, confirmed: Promise.resolve(outside) }));
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed;
    assert.equal(types(client.frames), [`error ${ErrorCode.AUTHENTICATION}`]);
    assert.equal([seen.slotsTaken, seen.takes, seen.admissionReleased], [0, 0, 1]);
    assert.match(seen.notes.join('\n'), /not inside agent\.service/);
  } finally {
    client.close();
  }
});

test('without a client unit to be inside, the hand-off carries no cgroup', async () => {
  const { deps, handed } = fakeBroker(undefined);
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed;
    assert.equal(types(client.frames), ['welcome']);
    assert.is(handed.length, 1);
    assert.is(handed[0]!.peer.cgroup, null);
  } finally {
    client.close();
  }
});

test('a peer that shuts its writing side before HELLO is whole still reads why: ERROR PROTOCOL, then the close (docs/protocol.md, receiver checklist)', async () => {
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 2 });
  for (let at = 0; at < hello.length; at += 1) {
    const { deps, seen, handed } = fakeBroker(undefined);
    const [clientFd, serverFd] = native().socketpair();
    if (at > 0) native().sendmsg(clientFd, hello, 0, at);
    native().shutdown(clientFd, 'write');
    const client = new Client(clientFd);
    const peer: PeerAtAccept = { credentials: { pid: process.pid, uid: 1500, gid: 1500 }, pidfd: native().pidfdOpen(process.pid), cgroup: CGROUP, startTicks: 1 };
    try {
      await serveConnection(new FdSocket(serverFd), peer, 'ordinary', Date.now(), deps);
      await client.closed;
      assert.equal(client.frames, [{ type: 'error', code: ErrorCode.PROTOCOL, message: 'client closed during the handshake' }], `cut at ${at}`);
      assert.equal([seen.takes, handed.length], [0, 0], `cut at ${at}: no worker`);
    } finally {
      client.close();
    }
  }
});

test('a peer that sends HELLO and closes before WELCOME: no worker is taken for it, its slots are freed, nothing is left open', async () => {
  // Without a client unit there is no wait between HELLO and WELCOME: the peer is gone by then, so the
  // WELCOME send fails outright (EPIPE) and its queue is emptied, the error reported a tick later.
  const { deps, seen, handed } = fakeBroker(undefined);
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 2 });
  native().sendmsg(clientFd, hello, 0, hello.length);
  closeQuietly(clientFd);
  const server = new FdSocket(serverFd);
  const pidfd = native().pidfdOpen(process.pid);
  const peer: PeerAtAccept = { credentials: { pid: process.pid, uid: 1500, gid: 1500 }, pidfd, cgroup: CGROUP, startTicks: 1 };
  await serveConnection(server, peer, 'ordinary', Date.now(), deps);
  assert.equal([seen.takes, handed.length, seen.adopted], [0, 0, 0], 'no worker is taken for a peer that is gone');
  assert.equal([seen.slotsTaken, seen.slotsReleased, seen.admissionReleased], [1, 1, 1], 'both slots are freed');
  assert.match(seen.notes.join('\n'), /client closed during the handshake/, 'the peer\'s own doing, not the supervisor\'s');
  assert.ok(server.closed, 'the connection is closed');
  assert.not.ok(isPidfd(pidfd), 'the peer\'s pidfd is closed');
});

/** Session slots, all `max` of them held by sessions running (returned), and the moment a start waits. */
function fullSlots(max: number) {
  const slots = new SessionSlots(max);
  const held = Array.from({ length: max }, () => slots.tryTake()!);
  const waits = deferred<void>();
  const take = slots.take.bind(slots);
  slots.take = (until, settleMs) => {
    const taken = take(until, settleMs);
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
    await client.closed;
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
    await client.closed;
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
    await client.closed;
    assert.equal(types(client.frames), [`error ${ErrorCode.SESSION_LIMIT}`], 'refused as before, not HANDSHAKE_TIMEOUT');
    assert.ok(Date.now() - acceptedAt >= 400, `waited ${Date.now() - acceptedAt} ms`);
    assert.equal([seen.takes, seen.admissionReleased, slots.waiting], [0, 1, 0]);
    held[0]!.release();
    assert.is(slots.used, 0, 'the slot is free once released: the refused start took nothing');
  } finally {
    client.close();
  }
});

test('16 means 16: a stopping session that takes longer than the whole handshake deadline still gives its slot to the start that waits, with the client\'s time left for START', async () => {
  const { slots, held, waited } = fullSlots(2);
  held[0]!.finishing();
  let deadlineMs = 0;
  const { deps, seen } = fakeBroker(undefined, 200, slots, 5000);
  const { server, client, peer } = connect();
  try {
    const acceptedAt = Date.now();
    const handOff = deps.takeWorker;
    deps.takeWorker = async () => {
      const worker = await handOff();
      return { ...worker, handOff: (...args: Parameters<HandOffWorker['handOff']>) => ((deadlineMs = args[4]), worker.handOff(...args)) };
    };
    const served = serveConnection(server, peer, 'ordinary', acceptedAt, deps);
    assert.is(await Promise.race([waited.then(() => 'waits'), served.then(() => 'answered')]), 'waits');
    // Three times the handshake deadline, as a unit whose programs ignore SIGHUP and SIGTERM takes.
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(client.frames, [], 'still waiting, not refused');
    held[0]!.release();
    await served;
    await client.closed;
    assert.equal(types(client.frames), ['welcome']);
    assert.is(seen.adopted, 1);
    assert.ok(Date.now() - acceptedAt >= 600);
    assert.ok(deadlineMs > 100 && deadlineMs <= 200, `the worker gets the client's own time left: ${deadlineMs} ms`);
  } finally {
    client.close();
  }
});

test("a kill() then spawn(): the start finds no slot finishing yet (the STOP is on its way) and watches settleMs for it, then waits for that slot", async () => {
  const { slots, held } = fullSlots(1);
  const { deps, seen } = fakeBroker(undefined, 2000, slots, 2000, 500);
  const { server, client, peer } = connect();
  try {
    const served = serveConnection(server, peer, 'ordinary', Date.now(), deps);
    while (slots.watching === 0) await new Promise((resolve) => setImmediate(resolve));
    // The STOP reaches the broker (the worker's 'finishing'), then the unit is gone.
    held[0]!.finishing();
    held[0]!.release();
    await served;
    await client.closed;
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
    await client.closed;
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

/** Whether descriptor `fd` of this process is (still) a pidfd. */
function isPidfd(fd: number): boolean {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[pidfd]';
  } catch {
    return false;
  }
}

test.run();
