// The broker's view of kept sessions (kept-sessions.ts): the count against limits.maxKept, routing by
// id with the states that refuse, and LIST within its bound.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KeptSessions, checkedEntry, type KeptWorker } from '../../src/broker/kept-sessions.ts';
import { KeptEnds } from '../../src/broker/kept-ends.ts';
import type { BrokerMessage, DescribedEntry } from '../../src/control/index.ts';
import { ErrorCode, SessionState } from '../../src/protocol/index.ts';
import { unitNameFor, sessionIdOf } from '../../src/systemd/index.ts';

const facts = (id: number) => ({ sessionId: id, keepMs: 1000, label: '', program: 'sh', cwd: '/', startedAtMs: 1, rows: 24, cols: 80, programPid: 3, mainPid: 2, origin: 1 as const });

function worker(byte: number, options: Partial<KeptWorker> = {}): KeptWorker & { sent: BrokerMessage[] } {
  const unit = unitNameFor(Buffer.alloc(16, byte));
  const sent: BrokerMessage[] = [];
  return { unit, keepGranted: true, kept: facts(sessionIdOf(unit)!), isFinishing: false, endReason: undefined, send: (message) => void sent.push(message), sent, ...options };
}

const entryOf = (id: number): DescribedEntry => ({ id, state: SessionState.DETACHED, controllers: 0, observers: 0, rows: 24, cols: 80, programPid: 3, mainPid: 2, startedAtMs: 1, keepMs: 1000, deadlineMs: 5, oldest: '0', next: '42', fresh: true, endCode: 0, endStatus: 0, origin: 1, label: '', program: 'sh', cwd: '/' });

test('keep requests: granted below limits.maxKept, refused at it; an ended session no longer counts', () => {
  const workers: KeptWorker[] = [worker(1), worker(2, { endReason: 'exit' })];
  const kept = new KeptSessions({ workers: () => workers, maxKept: () => 2, unitPrefix: 'opencode-pty-' });
  const third = worker(3, { keepGranted: false });
  workers.push(third);
  assert.ok(kept.keepRequested(third));
  assert.equal(third.sent, [{ type: 'keep-answer', granted: true }]);
  const fourth = worker(4, { keepGranted: false });
  workers.push(fourth);
  assert.not.ok(kept.keepRequested(fourth));
  assert.equal(fourth.sent, [{ type: 'keep-answer', granted: false }]);
  assert.is(kept.count, 2);
});

test('find: the worker by its unit\'s id; starting or finishing is SESSION_STATE; anything else NO_SESSION', () => {
  const running = worker(1);
  const starting = worker(2, { kept: undefined });
  const finishing = worker(3, { isFinishing: true });
  const notKept = worker(4, { keepGranted: false });
  const kept = new KeptSessions({ workers: () => [running, starting, finishing, notKept], maxKept: () => 8, unitPrefix: 'opencode-pty-' });
  assert.equal(kept.find(sessionIdOf(running.unit!)!), { worker: running });
  assert.is((kept.find(sessionIdOf(starting.unit!)!) as { code: number }).code, ErrorCode.SESSION_STATE);
  assert.is((kept.find(sessionIdOf(finishing.unit!)!) as { code: number }).code, ErrorCode.SESSION_STATE);
  assert.is((kept.find(sessionIdOf(notKept.unit!)!) as { code: number }).code, ErrorCode.NO_SESSION);
  assert.is((kept.find(12345) as { code: number }).code, ErrorCode.NO_SESSION);
  // A worker that exited (its 'ended' never came) runs nothing any more: nothing is routed to it.
  const exited = worker(5, { gone: true });
  const withExited = new KeptSessions({ workers: () => [exited], maxKept: () => 8, unitPrefix: 'opencode-pty-' });
  assert.is((withExited.find(sessionIdOf(exited.unit!)!) as { code: number }).code, ErrorCode.NO_SESSION);
});

test('reach: an ATTACH right after STARTED waits (bounded) for the worker\'s kept report, then is routed; one never reported is SESSION_STATE at the bound', async () => {
  let report: () => void = () => undefined;
  const starting = worker(6, { kept: undefined, keptSettled: new Promise<void>((resolve) => (report = resolve)) });
  const stuck = worker(7, { kept: undefined, keptSettled: new Promise<void>(() => undefined) });
  const kept = new KeptSessions({ workers: () => [starting, stuck], maxKept: () => 8, unitPrefix: 'opencode-pty-' });
  const reached = kept.reach(sessionIdOf(starting.unit!)!, undefined, 5_000);
  setTimeout(() => {
    starting.kept = facts(sessionIdOf(starting.unit!)!);
    report();
  }, 20);
  assert.equal(await reached, { worker: starting });
  const began = Date.now();
  assert.is(((await kept.reach(sessionIdOf(stuck.unit!)!, undefined, 50)) as { code: number }).code, ErrorCode.SESSION_STATE);
  assert.ok(Date.now() - began >= 45, 'waited for the bound');
  // Nothing to wait for: answered at once.
  assert.is(((await kept.reach(12345, undefined, 5_000)) as { code: number }).code, ErrorCode.NO_SESSION);
});

test('scope (a principal\'s `sees`): the service\'s principal lists and reaches only what its service started; the operator every one', async () => {
  const ours = worker(8, { service: 'agent.service' });
  const theirs = worker(9, { service: 'front.service' });
  const unknown = worker(10);
  const kept = new KeptSessions({ workers: () => [ours, theirs, unknown], maxKept: () => 8, unitPrefix: 'opencode-pty-', listBoundMs: 20 });
  const agent = { sees: 'service', service: 'agent.service' } as const;
  const idOf = (one: KeptWorker) => sessionIdOf(one.unit!)!;
  assert.equal((await kept.list(agent)).map((entry) => entry.id), [idOf(ours)]);
  assert.equal((await kept.list()).map((entry) => entry.id).sort(), [idOf(ours), idOf(theirs), idOf(unknown)].sort());
  assert.equal(kept.find(idOf(ours), agent), { worker: ours });
  for (const other of [theirs, unknown]) {
    assert.is((kept.find(idOf(other), agent) as { code: number }).code, ErrorCode.NO_SESSION);
    assert.is(((await kept.reach(idOf(other), agent)) as { code: number }).code, ErrorCode.NO_SESSION);
    assert.equal(kept.find(idOf(other)), { worker: other });
  }
  assert.is((await kept.list({ sees: 'service', service: undefined })).length, 0);
});

test('LIST: each worker\'s answer, or within the bound what the broker knows as unknown; a wrong answer is not taken', async () => {
  const answering = worker(1);
  const silent = worker(2);
  const lying = worker(3);
  const kept = new KeptSessions({ workers: () => [answering, silent, lying], maxKept: () => 8, unitPrefix: 'opencode-pty-', listBoundMs: 50 });
  const listing = kept.list();
  const requestOf = (w: typeof answering) => (w.sent[0] as { requestId: number }).requestId;
  kept.described(requestOf(answering), entryOf(answering.kept!.sessionId));
  kept.described(requestOf(lying), { ...entryOf(lying.kept!.sessionId), next: '-1' });
  const started = Date.now();
  const entries = await listing;
  assert.ok(Date.now() - started < 1000);
  assert.equal(entries.map((entry) => [entry.state, entry.next, entry.fresh]), [[SessionState.DETACHED, 42n, true], [SessionState.UNKNOWN, 0n, false], [SessionState.UNKNOWN, 0n, false]]);
  assert.is(checkedEntry(entryOf(7), 8), undefined, 'another id');
});

test("a session whose end root keeps: listed once, as ended (its worker, still finishing, is not asked); counted once against limits.maxKept; taken from the ends, never routed", async () => {
  const running = worker(1);
  const ending = worker(2, { isFinishing: true });
  const ends = new KeptEnds({ unitPrefix: 'opencode-pty-', maxKept: () => 8, maxKeepMs: () => 86_400_000, log: () => undefined });
  const kept = new KeptSessions({ workers: () => [running, ending], maxKept: () => 2, unitPrefix: 'opencode-pty-', ends, listBoundMs: 50 });
  const id = sessionIdOf(ending.unit!)!;
  const session = { format: 1 as const, unit: ending.unit!, ...facts(id), retainBytes: 4096, service: null, detachedSinceMs: 1 };
  const end = { code: 1, status: 0, result: 'oom-kill', accounting: { cpuUsageNsec: null, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: null, outputBytes: null, durationUsec: null } };
  kept.ended(ending, { format: 1, session, end, next: '0', generation: 1, endedAtMs: Date.now(), untilMs: Date.now() + 60_000 });
  assert.is(kept.count, 2, 'the ended one and the running one');
  assert.not.ok(kept.keepRequested(worker(3, { keepGranted: false })), 'no room: the ended session holds its place');
  const listing = kept.list();
  assert.equal(ending.sent, [], 'its worker is not asked');
  const described = running.sent.find((message) => message.type === 'describe') as { requestId: number };
  kept.described(described.requestId, entryOf(sessionIdOf(running.unit!)!));
  const entries = await listing;
  assert.equal(entries.map((entry) => [entry.id, entry.state]).sort(), [[sessionIdOf(running.unit!)!, SessionState.DETACHED], [id, SessionState.ENDED]].sort());
  assert.is((kept.find(id) as { code: number }).code, ErrorCode.NO_SESSION, 'never routed to its worker');
  assert.equal(kept.takeEnded(id)?.end, end);
  assert.is(kept.takeEnded(id), undefined);
  ends.close();
});

test('an end read back under a live session\'s id (planted, or stale) never hides it: the session is listed and routed as itself, and the end is forgotten once it reports kept', async () => {
  const adopted = worker(1);
  const id = sessionIdOf(adopted.unit!)!;
  const session = { format: 1 as const, unit: adopted.unit!, ...facts(id), retainBytes: 4096, service: null, detachedSinceMs: 1 };
  const end = { code: 2, status: 0, result: 'exit-code', accounting: { cpuUsageNsec: null, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: null, outputBytes: null, durationUsec: null } };
  const forged = { format: 1 as const, session, end, next: '0', generation: 1, endedAtMs: Date.now() - 1000, untilMs: Date.now() + 60_000 };
  const removed: number[] = [];
  const logs: string[] = [];
  const store = { endedIds: () => [id], readEnded: () => ({ ended: forged }), removeEnded: (one: number) => void removed.push(one) };
  const ends = new KeptEnds({ store, unitPrefix: 'opencode-pty-', maxKept: () => 8, maxKeepMs: () => 86_400_000, log: (_level, message) => void logs.push(message) });
  ends.load();
  const kept = new KeptSessions({ workers: () => [adopted], maxKept: () => 8, unitPrefix: 'opencode-pty-', ends, listBoundMs: 50 });
  assert.equal(kept.find(id), { worker: adopted }, 'routed to the live session');
  const listing = kept.list();
  const described = adopted.sent.find((message) => message.type === 'describe') as { requestId: number };
  kept.described(described.requestId, entryOf(id));
  assert.equal((await listing).map((entry) => [entry.id, entry.state]), [[id, SessionState.DETACHED]], 'listed once, live');
  kept.live(adopted);
  assert.is(ends.count, 0);
  assert.equal(removed, [id], 'its file removed');
  assert.ok(logs.some((line) => /forgotten: the session is live/.test(line)), logs.join('\n'));
  // An end its own worker reported is not forgotten by that worker's being live before.
  kept.ended(adopted, { ...forged, endedAtMs: Date.now() });
  kept.live(adopted);
  assert.is(ends.count, 1);
  assert.is((kept.find(id) as { code: number }).code, ErrorCode.NO_SESSION, 'its own end answers for it now');
  ends.close();
});

test.run();
