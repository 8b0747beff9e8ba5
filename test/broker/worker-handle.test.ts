// A worker as the broker sees it (worker-handle.ts) over the real control channel, with a fake child
// process: messages that do not fit the worker's state end that worker, never the broker, and never
// count for a session the worker is handed later (live-sessions.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ChildProcess } from 'node:child_process';
import { LiveSessions } from '../../src/broker/live-sessions.ts';
import { SessionSlots } from '../../src/broker/session-slots.ts';
import { WorkerHandle } from '../../src/broker/worker-handle.ts';
import { encodeControl, type WorkerMessage } from '../../src/control/broker-worker.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { deferred } from '../support/deferred.ts';
import { nextTurn, until } from '../support/wait.ts';

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
  // What adopt() chains on the worker's promises has run by the next turn (a 'finishing' kept from before would have marked the slot).
  await nextTurn();
  assert.is(slots.finishing, 0, 'a session just handed over is not finishing');
  fake.exit(0);
});

test('a warm unit named while idle is the worker\'s, claimed with its session\'s unit; a retirement forgets only the unit it names', async () => {
  const fake = fakeWorker();
  fake.send({ type: 'warm', name: 'w1.service' }, { type: 'ready' });
  await fake.worker.ready;
  assert.is(fake.worker.warmUnit, 'w1.service', 'named while idle: no fault');
  const sessions = liveSessions();
  sessions.adopt(fake.worker, new SessionSlots(1).tryTake()!);
  fake.worker.unit = 's1.service';
  assert.equal([...sessions.claimed()].sort(), ['s1.service', 'w1.service']);
  // A later unit named before the earlier one's retirement came: the retirement does not forget it.
  fake.send({ type: 'warm', name: 'w2.service' }, { type: 'warm', name: 'w1.service', retired: true });
  await until(() => fake.worker.warmUnit !== 'w1.service', 2000, 'the messages read');
  assert.is(fake.worker.warmUnit, 'w2.service');
  fake.send({ type: 'warm', name: 'w2.service', retired: true });
  await until(() => fake.worker.warmUnit === undefined, 2000, 'the retirement read');
  fake.exit(0);
});

test('a worker message that is not an object ends the worker, not the broker', async () => {
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

test('an `ended` a worker sends while it has no session does not free the next session\'s slot', async () => {
  const slots = new SessionSlots(1);
  const fake = fakeWorker();
  fake.send({ type: 'ready' }, { type: 'ended', reason: 'exit', reusable: true });
  await fake.worker.ready;
  assert.is(await fake.killed, 'SIGKILL', 'a worker that reports a session it does not have is ended');
  liveSessions().adopt(fake.worker, slots.tryTake()!);
  // What adopt() chains on the worker's promises has run by the next turn (an 'ended' kept from before would have freed the slot).
  await nextTurn();
  assert.is(slots.used, 1, 'the session handed over holds its slot');
  fake.exit(0);
});

test.run();
