// Review of the wait for a finishing session's slot: cases the change leaves open. Each test states
// what should hold; those that fail today are findings.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ChildProcess } from 'node:child_process';
import { serveConnection, type ConnectionDeps, type HandOffWorker } from '../../src/broker/connection.ts';
import type { PeerAtAccept } from '../../src/broker/accept-gate.ts';
import { LiveSessions } from '../../src/broker/live-sessions.ts';
import { SessionSlots } from '../../src/broker/session-slots.ts';
import { WorkerHandle } from '../../src/broker/worker-handle.ts';
import { encodeControl, type WorkerMessage } from '../../src/control/broker-worker.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { encodeFrame, type Frame } from '../../src/protocol/index.ts';
import { FrameClient as Client } from '../frame-client.ts';
import { deferred } from '../deferred.ts';

const CGROUP = '/system.slice/agent.service';

function deps(slots: SessionSlots, handshakeTimeoutMs = 2000): ConnectionDeps<HandOffWorker> {
  const worker: HandOffWorker = {
    child: { pid: 4242 } as ChildProcess,
    handOff(_id, clientFd, pidfd) {
      closeQuietly(clientFd);
      closeQuietly(pidfd);
    },
    shutdown: () => undefined,
  };
  return {
    handshakeTimeoutMs,
    slotWaitMs: 2000,
    settleMs: 0,
    clientService: undefined,
    cgroupOf: () => CGROUP,
    admission: { release: () => undefined },
    slots,
    refusals: { note: () => undefined },
    takeWorker: async () => worker,
    adopt: () => undefined,
    nextId: () => 1,
    log: () => undefined,
  };
}

/** A connection whose client has sent HELLO; with `read` false nobody reads the client side (clientFd). */
function connect(read = true): { server: FdSocket; client: Client | undefined; clientFd: number; peer: PeerAtAccept } {
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 2 });
  native().sendmsg(clientFd, hello, 0, hello.length);
  const credentials = { pid: process.pid, uid: 1500, gid: 1500 };
  const peer: PeerAtAccept = { credentials, pidfd: native().pidfdOpen(process.pid), cgroup: CGROUP, startTicks: 1 };
  return { server: new FdSocket(serverFd), client: read ? new Client(clientFd) : undefined, clientFd, peer };
}

const types = (frames: Frame[]) => frames.map((frame) => (frame.type === 'error' ? `error ${frame.code}` : frame.type));

/** Resolves once `slots` has `count` waiters (polled per turn: the tests have no other event for it). */
async function waiters(slots: SessionSlots, count: number): Promise<void> {
  while (slots.waiting < count) await new Promise((resolve) => setImmediate(resolve));
}

test('a waiter whose client has gone (HELLO, then close) does not keep a live start from waiting for the finishing slot', async () => {
  const slots = new SessionSlots(1);
  const held = slots.tryTake()!;
  held.finishing();
  const d = deps(slots);
  // The gone one: HELLO and close, before the broker reads anything.
  const gone = connect(false);
  const goneServed = serveConnection(gone.server, gone.peer, 'ordinary', Date.now(), d);
  await waiters(slots, 1);
  closeQuietly(gone.clientFd);
  // Its hang-up reaches the broker's event loop.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const live = connect();
  try {
    const liveServed = serveConnection(live.server, live.peer, 'ordinary', Date.now(), d);
    await new Promise((resolve) => setTimeout(resolve, 20));
    held.release();
    await Promise.all([goneServed, liveServed]);
    await live.client!.closed;
    assert.equal(types(live.client!.frames), ['welcome'], 'the live start waits behind no dead connection and gets the slot');
  } finally {
    live.client!.close();
  }
});

/** A worker process as far as the broker can tell, over the real control channel. */
function fakeWorker() {
  const [ours, theirs] = native().socketpair();
  const gone = deferred<{ why: string }>();
  const killed = deferred<string>();
  const child = { pid: 4243, exitCode: null as number | null, signalCode: null, kill: (signal: string) => (killed.resolve(signal), true) } as unknown as ChildProcess & { exitCode: number | null };
  const worker = new WorkerHandle({ child, control: ours, gone: gone.promise }, () => undefined);
  const peer = new FdSocket(theirs);
  peer.on('error', () => undefined);
  return {
    worker,
    killed: killed.promise,
    send: (...messages: WorkerMessage[]) => peer.write(Buffer.concat(messages.map((message) => encodeControl(message)))),
    raw: (bytes: Buffer) => peer.write(bytes),
    exit: (code: number) => {
      child.exitCode = code;
      peer.close();
      gone.resolve({ why: `exited (${code})` });
    },
  };
}

function liveSessions() {
  return new LiveSessions({
    units: { stopAndWait: async () => undefined, kill: async () => undefined },
    log: () => undefined,
    reapTimes: { stopWaitMs: 100, killWaitMs: 100 },
    giveBack: () => undefined,
    changed: () => undefined,
    slotFreed: () => undefined,
  });
}

test('a `finishing` a worker sends while it has no session (a spare, idle) does not mark the next session\'s slot finishing', async () => {
  const slots = new SessionSlots(1);
  const fake = fakeWorker();
  fake.send({ type: 'ready' }, { type: 'finishing' });
  await fake.worker.ready;
  assert.is(await fake.killed, 'SIGKILL', 'a worker that reports a session it does not have is ended');
  // The broker hands it a session later, which runs.
  liveSessions().adopt(fake.worker, slots.tryTake()!);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.is(slots.finishing, 0, 'a session just handed over is not finishing');
  fake.exit(0);
});

test('(before this change too) a worker message that is not an object ends the worker, not the broker', async () => {
  const fake = fakeWorker();
  const thrown: unknown[] = [];
  const onUncaught = (error: unknown) => void thrown.push(error);
  process.on('uncaughtException', onUncaught);
  try {
    const body = Buffer.from('null');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length);
    // A broken worker's message: valid length and JSON, not an object.
    fake.raw(Buffer.concat([header, body]));
    assert.is(await fake.killed, 'SIGKILL', 'the worker is ended');
    assert.equal(thrown.map(String), [], 'nothing thrown into the broker\'s event loop');
  } finally {
    process.off('uncaughtException', onUncaught);
    fake.exit(0);
  }
});

test('(before this change too) an `ended` a worker sends while it has no session does not free the next session\'s slot', async () => {
  const slots = new SessionSlots(1);
  const fake = fakeWorker();
  fake.send({ type: 'ready' }, { type: 'ended', reason: 'exit', reusable: true });
  await fake.worker.ready;
  assert.is(await fake.killed, 'SIGKILL', 'a worker that reports a session it does not have is ended');
  liveSessions().adopt(fake.worker, slots.tryTake()!);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.is(slots.used, 1, 'the session handed over holds its slot');
  fake.exit(0);
});

test.run();
