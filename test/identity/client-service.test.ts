// The client service's state decides faster but never refuses a peer a fresh look would admit:
// negative answers only from reads newer than the peer; reads single-flight; errors kept.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ClientService, mainPidAnswer, membership, plausiblyInside, type ServiceSnapshot } from '../../src/identity/client-service.ts';
import type { ServiceState } from '../../src/systemd/unit-manager.ts';

const SERVICE = 'agent.service';
const live = (mainPid: number, invocation = 1): ServiceState => ({
  activeState: 'active',
  subState: 'running',
  mainPid,
  controlGroup: '/system.slice/agent.service',
  invocationId: Buffer.alloc(16, invocation),
});
const snap = (state: ServiceState | undefined, readStartTicks: number, error?: Error): ServiceSnapshot => ({ state, error, readStartTicks, readAt: 0 });

test('a cgroup that names no component equal to the service is outside without any look', () => {
  assert.not.ok(plausiblyInside('/system.slice/opencode-pty-session-00.service', SERVICE));
  assert.not.ok(plausiblyInside('/system.slice/agent.service-evil', SERVICE));
  assert.not.ok(plausiblyInside('/system.slice/x-agent.service', SERVICE));
  assert.ok(plausiblyInside('/system.slice/agent.service', SERVICE));
  assert.ok(plausiblyInside('/system.slice/agent.service/tasks', SERVICE));
  assert.is(membership('/user.slice/evil', undefined, SERVICE, 100), 'outside');
});

test('membership: inside a live unit at once; a negative only from a read newer than the peer', () => {
  const cg = '/system.slice/agent.service';
  assert.is(membership(cg, snap(live(10), 50), SERVICE, 40), 'inside');
  assert.is(membership(`${cg}/child`, snap(live(10), 50), SERVICE, 40), 'inside');
  // The service was down when read, but the read is older than the peer: a restart may have happened.
  assert.is(membership(cg, snap({ ...live(0), activeState: 'inactive', subState: 'dead', controlGroup: '' }, 50), SERVICE, 60), 'unknown');
  assert.is(membership(cg, snap({ ...live(0), activeState: 'inactive', subState: 'dead', controlGroup: '' }, 70), SERVICE, 60), 'outside');
  // Same tick as the peer's start is not "newer".
  assert.is(membership(cg, snap({ ...live(0), activeState: 'activating' }, 60), SERVICE, 60), 'unknown');
  assert.is(membership(cg, snap(undefined, 70, new Error('bus gone')), SERVICE, 60), 'unknown', 'a failed read never refuses by itself');
});

test('MainPID: yes from any live snapshot; no only from a read newer than the peer', () => {
  assert.is(mainPidAnswer(10, snap(live(10), 50), SERVICE, 40), true);
  assert.is(mainPidAnswer(11, snap(live(10), 50), SERVICE, 40), false);
  assert.is(mainPidAnswer(11, snap(live(10), 50), SERVICE, 50), 'unknown');
  assert.is(mainPidAnswer(11, snap(live(10), 50), SERVICE, 55), 'unknown', 'a restarted agent is younger than the read');
});

/** A ClientService over a scripted bus: each read resolves when the test says, with the given state. */
function scripted(initialTicks = 100) {
  let ticks = initialTicks;
  let now = 0;
  const pending: Array<{ resolve: (state: ServiceState) => void; reject: (error: Error) => void }> = [];
  const readWaiters: Array<() => void> = [];
  const read = () =>
    new Promise<ServiceState>((resolve, reject) => {
      pending.push({ resolve, reject });
      for (const wake of readWaiters.splice(0)) wake();
    });
  const service = new ClientService(SERVICE, read, {
    ttlMs: 1000,
    now: () => now,
    ticks: () => ticks,
  });
  const settle = async () => {
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
  };
  return {
    service,
    pending,
    setTicks: (value: number) => (ticks = value),
    setNow: (value: number) => (now = value),
    settle,
    /** Resolves when the service asks for its next read; rejects, saying so, after `timeoutMs`. */
    nextRead: (timeoutMs = 2000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no read asked for within ${timeoutMs} ms`)), timeoutMs);
        readWaiters.push(() => (clearTimeout(timer), resolve()));
      }),
  };
}

test('freshen: a read in the background when none was made or the latest is past half its window, never two at once; latest and latestMainPid as read', async () => {
  const bus = scripted(100);
  assert.is(bus.service.latest, undefined);
  assert.is(bus.service.latestMainPid, undefined);
  bus.service.freshen();
  bus.service.freshen();
  assert.is(bus.pending.length, 1, 'single-flight');
  bus.pending.shift()!.resolve(live(7));
  await bus.settle();
  const first = bus.service.latest;
  assert.is(bus.service.latestMainPid, 7);
  bus.setNow(400);
  bus.service.freshen();
  assert.is(bus.pending.length, 0, 'young enough: no read');
  bus.setNow(600);
  bus.service.freshen();
  assert.is(bus.pending.length, 1);
  bus.pending.shift()!.resolve({ ...live(0), activeState: 'inactive', subState: 'dead' });
  await bus.settle();
  assert.ok(bus.service.latest !== first, 'a new read is a new epoch for what was decided from the old one');
  assert.is(bus.service.latestMainPid, undefined, 'a service that is not live names no MainPID');
});

test('reads are single-flight: concurrent callers share one read', async () => {
  const bus = scripted();
  const answers = Promise.all([bus.service.contains('/system.slice/agent.service', 50), bus.service.contains('/system.slice/agent.service/x', 50), bus.service.isMainPid(7, 50)]);
  await bus.settle();
  assert.is(bus.pending.length, 1);
  bus.pending[0]!.resolve(live(7));
  const [a, b, c] = await answers;
  assert.ok(a.inside && b.inside && c.main);
  assert.is(bus.service.reads, 1);
});

test('past half the freshness window the next read starts in the background; the caller is answered at once', async () => {
  const bus = scripted(100);
  const first = bus.service.contains('/system.slice/agent.service', 50);
  await bus.settle();
  bus.pending.shift()!.resolve(live(7));
  assert.ok((await first).inside);
  bus.setNow(400);
  assert.ok((await bus.service.contains('/system.slice/agent.service', 50)).inside);
  assert.is(bus.pending.length, 0, 'young enough: no read');
  bus.setNow(600);
  assert.ok((await bus.service.contains('/system.slice/agent.service', 50)).inside, 'answered from the snapshot');
  assert.is(bus.pending.length, 1, 'a read began meanwhile');
  assert.ok((await bus.service.contains('/system.slice/agent.service', 50)).inside);
  assert.is(bus.pending.length, 1, 'one read at a time');
  bus.pending.shift()!.resolve(live(8));
  await bus.settle();
  // The new snapshot (read at 600) is the one served from now on: young again at 1000.
  bus.setNow(1000);
  assert.ok((await bus.service.isMainPid(8, 50)).main);
  assert.is(bus.pending.length, 0);
  assert.is(bus.service.reads, 2);
});

test('isMainPidNow answers only from a read begun after the call: a cached snapshot naming the peer is not enough', async () => {
  const bus = scripted(100);
  const first = bus.service.isMainPid(7, 50);
  await bus.settle();
  bus.pending.shift()!.resolve(live(7, 1));
  assert.ok((await first).main);
  // The cache (read at tick 100) names 7; the fresh look must still be made, and it decides.
  bus.setTicks(130);
  const fresh = bus.service.isMainPidNow(7);
  await bus.settle();
  assert.is(bus.pending.length, 1, 'a new read for the kept-session request');
  bus.pending.shift()!.resolve(live(8, 2));
  assert.not.ok((await fresh).main, 'the agent was replaced meanwhile');
  assert.is(bus.service.reads, 2);
});

test('a restarted agent is admitted at once: a cached "not the MainPID" is looked at again', async () => {
  const bus = scripted(100);
  const first = bus.service.isMainPid(7, 50);
  await bus.settle();
  bus.pending.shift()!.resolve(live(7, 1));
  assert.ok((await first).main);
  // The agent restarts: new MainPID 8, started at tick 120, while the cached snapshot (tick 100) says 7.
  bus.setTicks(121);
  const second = bus.service.isMainPid(8, 120);
  await bus.settle();
  assert.is(bus.pending.length, 1, 'a second read was made instead of refusing from the cache');
  bus.pending.shift()!.resolve(live(8, 2));
  assert.ok((await second).main);
  // An older process of the agent that is not the MainPID is answered from that read, with no new one.
  assert.not.ok((await bus.service.isMainPid(9, 110)).main);
  assert.is(bus.service.reads, 2);
});

test('a read already in flight that began before the peer started is not enough: one more follows', async () => {
  const bus = scripted(100);
  const early = bus.service.contains('/system.slice/agent.service', 50);
  await bus.settle();
  bus.setTicks(130);
  const late = bus.service.contains('/system.slice/agent.service', 120);
  await bus.settle();
  bus.pending.shift()!.resolve({ ...live(0), activeState: 'activating', subState: 'start' });
  assert.not.ok((await early).inside);
  await bus.settle();
  assert.is(bus.pending.length, 1, 'the late peer got a read of its own');
  bus.pending.shift()!.resolve(live(8));
  assert.ok((await late).inside);
});

test('a peer in its start tick waits for the next tick rather than trusting a same-tick read', async () => {
  const bus = scripted(100);
  const answer = bus.service.isMainPid(8, 100);
  await bus.settle();
  bus.pending.shift()!.resolve(live(7));
  await bus.settle();
  assert.is(bus.pending.length, 0, 'no second read while the clock is still in the peer\'s tick');
  const asked = bus.nextRead();
  bus.setTicks(101);
  // The service looks at the clock again once per tick (10 ms): its next read is the event.
  await asked;
  assert.is(bus.pending.length, 1);
  bus.pending.shift()!.resolve(live(8));
  assert.ok((await answer).main);
});

test('a failed read answers its callers with its cause, once: no retry loop, and the good snapshot stays', async () => {
  const bus = scripted(100);
  const first = bus.service.isMainPid(7, 50);
  await bus.settle();
  bus.pending.shift()!.resolve(live(7));
  await first;
  bus.setNow(5000);
  bus.setTicks(200);
  const second = bus.service.contains('/system.slice/agent.service', 150);
  await bus.settle();
  bus.pending.shift()!.reject(new Error('org.freedesktop.DBus.Error.NoReply'));
  const answer = await second;
  assert.not.ok(answer.inside);
  assert.match(answer.snapshot!.error!.message, 'NoReply');
  assert.is(bus.service.reads, 2);
  assert.is(bus.pending.length, 0);
  // The MainPID known from the good read still answers positively within its window.
  bus.setNow(5100);
  const third = bus.service.isMainPid(7, 50);
  await bus.settle();
  assert.is(bus.pending.length, 1, 'the stale good snapshot is refreshed, not trusted');
  bus.pending.shift()!.resolve(live(7));
  assert.ok((await third).main);
});

test('with no snapshot at all, a failed read is a refusal that carries its cause', async () => {
  const bus = scripted(100);
  const answer = bus.service.contains('/system.slice/agent.service', 50);
  await bus.settle();
  bus.pending.shift()!.reject(new Error('Unit agent.service not loaded'));
  const result = await answer;
  assert.not.ok(result.inside);
  assert.match(result.snapshot!.error!.message, 'not loaded');
});


test('an old snapshot that puts the peer inside answers at once, provisionally; the fresh look decides', async () => {
  const bus = scripted(100);
  const first = bus.service.contains('/system.slice/agent.service', 50);
  await bus.settle();
  bus.pending.shift()!.resolve(live(7));
  assert.ok((await first).inside);
  bus.setNow(1500);
  const look = await bus.service.containsProvisionally('/system.slice/agent.service/x', 50);
  assert.ok(look.inside && look.provisional, 'answered from the old snapshot, marked provisional');
  assert.is(bus.pending.length, 1, 'the fresh look began at once');
  // The service stopped meanwhile: the confirmation says no.
  bus.pending.shift()!.resolve({ ...live(0), activeState: 'deactivating', subState: 'stop-sigterm' });
  const confirmed = await look.confirmed;
  assert.not.ok(confirmed.inside);
  assert.is(confirmed.snapshot?.state?.activeState, 'deactivating');
  assert.is(bus.service.reads, 2);
});

test('a young snapshot answers for good; an old one that does not put the peer inside waits for the fresh look', async () => {
  const bus = scripted(100);
  const first = bus.service.contains('/system.slice/agent.service', 50);
  await bus.settle();
  bus.pending.shift()!.resolve(live(7));
  await first;
  bus.setNow(200);
  const young = await bus.service.containsProvisionally('/system.slice/agent.service', 50);
  assert.ok(young.inside);
  assert.not.ok(young.provisional);
  assert.is((await young.confirmed).snapshot, young.snapshot, 'nothing more to confirm');
  assert.is(bus.pending.length, 0);

  // The service was starting when last read (not live): an old snapshot like that vouches for nothing.
  const other = scripted(100);
  const early = other.service.contains('/system.slice/agent.service', 50);
  await other.settle();
  other.pending.shift()!.resolve({ ...live(0), activeState: 'activating', subState: 'start' });
  await early;
  other.setNow(1500);
  other.setTicks(200);
  let settled = false;
  const waiting = other.service.containsProvisionally('/system.slice/agent.service', 150).then((look) => ((settled = true), look));
  await other.settle();
  assert.not.ok(settled, 'no answer before the fresh look');
  assert.is(other.pending.length, 1);
  other.pending.shift()!.resolve(live(8));
  const look = await waiting;
  assert.ok(look.inside);
  assert.not.ok(look.provisional);
});

test.run();
