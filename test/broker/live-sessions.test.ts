// A live session's slot as the broker holds it (live-sessions.ts, worker-handle.ts), against a fake
// worker process speaking the real control channel over a socketpair: its `finishing` marks the slot
// finishing, so a start that finds every slot held waits for it, and its end, or its death, frees it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { LiveSessions } from '../../src/broker/live-sessions.ts';
import { SessionSlots } from '../../src/broker/session-slots.ts';
import { WorkerHandle } from '../../src/broker/worker-handle.ts';
import { encodeControl, type WorkerMessage } from '../../src/control/broker-worker.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { deferred } from '../support/deferred.ts';

/** A worker process as far as the broker can tell: its control channel's other end, and its exit. */
function fakeWorker() {
  const [ours, theirs] = native().socketpair();
  const gone = deferred<{ why: string }>();
  const child = { pid: 4242, exitCode: null as number | null, signalCode: null, kill: () => true } as unknown as ChildProcess & { exitCode: number | null };
  const worker = new WorkerHandle({ child, control: ours, gone: gone.promise }, () => undefined);
  const peer = new FdSocket(theirs);
  peer.on('error', () => undefined);
  return {
    worker,
    send: (...messages: WorkerMessage[]) => peer.write(Buffer.concat(messages.map((message) => encodeControl(message)))),
    exit: (code: number) => {
      child.exitCode = code;
      peer.close();
      gone.resolve({ why: `exited (${code})` });
    },
  };
}

/** Every slot held, the last one by a session adopted into `sessions`. */
function running(max: number) {
  const slots = new SessionSlots(max);
  const others = Array.from({ length: max - 1 }, () => slots.tryTake()!);
  const given = deferred<WorkerHandle>();
  const freed = deferred<void>();
  const stopped: string[] = [];
  const sessions = new LiveSessions({
    units: { stopAndWait: async (unit) => void stopped.push(unit), kill: async () => undefined },
    log: () => undefined,
    reapTimes: { stopWaitMs: 100, killWaitMs: 100 },
    giveBack: (worker) => given.resolve(worker),
    changed: () => undefined,
    slotFreed: () => freed.resolve(),
  });
  const fake = fakeWorker();
  // Handed a session, as the broker does before it adopts one (its messages about a session count only then).
  fake.worker.handOff(1, openSync('/dev/null', 'r'), openSync('/dev/null', 'r'), { pid: process.pid, uid: 1500, gid: 1500, cgroup: null }, 1000, 1);
  sessions.adopt(fake.worker, slots.tryTake()!);
  return { slots, others, sessions, fake, given: given.promise, freed: freed.promise, stopped };
}

const never = () => new AbortController().signal;

test('`finishing` marks the session\'s slot finishing; its clean end hands the slot to the start that waits', async () => {
  const { slots, fake, given } = running(2);
  fake.send({ type: 'unit', name: 'p-session-a.service' }, { type: 'started', mainPid: 7 }, { type: 'finishing' });
  await fake.worker.finishing;
  assert.equal([slots.used, slots.finishing], [2, 1]);
  const waited = slots.take(never());
  fake.send({ type: 'ended', reason: 'exit', reusable: true }, { type: 'ready' });
  assert.is(await given, fake.worker, 'the worker goes back to the pool');
  assert.ok(await waited, 'the waiting start got the slot');
  assert.equal([slots.used, slots.finishing, slots.waiting], [2, 0, 0]);
  fake.exit(0);
});

test('a worker that dies after `finishing` still frees its slot, once its unit is stopped', async () => {
  const { slots, fake, freed, stopped } = running(1);
  fake.send({ type: 'unit', name: 'p-session-b.service' }, { type: 'finishing' });
  await fake.worker.finishing;
  const waited = slots.take(never());
  fake.exit(1);
  await freed;
  assert.equal(stopped, ['p-session-b.service'], 'the broker stops the unit the worker left');
  assert.ok(await waited);
  assert.equal([slots.used, slots.finishing, slots.waiting], [1, 0, 0]);
});

test('a worker that dies without `finishing`: nothing waited for its slot, which is freed all the same', async () => {
  const { slots, fake, freed } = running(1);
  fake.send({ type: 'unit', name: 'p-session-c.service' });
  assert.is(await slots.take(never()), undefined, 'nothing is finishing: refused at once');
  fake.exit(1);
  await freed;
  assert.equal([slots.used, slots.finishing], [0, 0]);
});

test.run();
