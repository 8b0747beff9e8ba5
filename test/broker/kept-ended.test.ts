// The ends root keeps of kept sessions past their units (src/broker/kept-ended.ts, kept-ends.ts): LIST's
// entry, ATTACH's and STOP_SESSION's answers, the table's checks, its time and its bound.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { attachAnswer, endedEntry, overBound, stopAnswer } from '../../src/broker/kept-ended.ts';
import { KeptEnds } from '../../src/broker/kept-ends.ts';
import { KeptStore, type EndedRecord } from '../../src/kept-store/index.ts';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Limits, Role, SessionState, encodeFrame, sessionsFrame } from '../../src/protocol/index.ts';
import { sessionIdOf } from '../../src/systemd/index.ts';

const PREFIX = 'opencode-pty-';
const unitOf = (n: number) => `opencode-pty-session-${n.toString(16).padStart(13, '0')}0123456789abcdef012.service`;
const ACCOUNTING = { cpuUsageNsec: 1000, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: null, outputBytes: null, durationUsec: null };

function ended(n: number, over: Partial<EndedRecord> = {}, service: string | null = 'opencode.service'): EndedRecord {
  const unit = unitOf(n);
  const session = { format: 1 as const, unit, sessionId: sessionIdOf(unit, PREFIX)!, keepMs: 60_000, retainBytes: 4096, label: `s${n}`, program: 'sh', cwd: '/', startedAtMs: 1000, rows: 24, cols: 80, programPid: 42, mainPid: 41, origin: 1 as const, service, detachedSinceMs: 2000 };
  return { format: 1, session, end: { code: 2, status: 15, result: 'timeout', accounting: ACCOUNTING }, next: '100', generation: 2, endedAtMs: 5000, untilMs: 62_000, ...over };
}

test("LIST's entry: ended, with its end, no connection, the time root forgets it; the codec takes it", () => {
  const entry = endedEntry(ended(1));
  assert.is(entry.state, SessionState.ENDED);
  assert.equal([entry.endCode, entry.endStatus, entry.deadlineMs, entry.oldest, entry.next, entry.fresh, entry.controllers, entry.observers], [2, 15, 62_000, 100n, 100n, false, 0, 0]);
  assert.equal([entry.label, entry.programPid, entry.mainPid, entry.keepMs], ['s1', 42, 41, 60_000]);
  assert.is(sessionsFrame([entry]).sessions.length, 1);
});

test('ATTACH: ATTACHED at the last offset root learnt, TRUNCATED for what went with the helper, then EXIT; each frame encodes', () => {
  const record = ended(1);
  const from0 = attachAnswer(record, { role: Role.CONTROL, fromOffset: 0n });
  assert.equal(from0.map((frame) => frame.type), ['attached', 'truncated', 'exit']);
  assert.equal(from0[0], { type: 'attached', id: record.session.sessionId, role: Role.CONTROL, generation: 3, oldest: 100n, next: 100n, programPid: 42, mainPid: 41, unit: record.session.unit });
  assert.equal(from0[1], { type: 'truncated', oldest: 100n, dropped: 100n });
  assert.equal(from0[2], { type: 'exit', code: 2, status: 15, result: 'timeout', accounting: ACCOUNTING });
  for (const frame of from0) encodeFrame(frame, 3);
  // From the offset root knows, or from now: nothing dropped; an observer keeps the generation.
  assert.equal(attachAnswer(record, { role: Role.OBSERVE, fromOffset: 100n }).map((frame) => frame.type), ['attached', 'exit']);
  const now = attachAnswer(record, { role: Role.OBSERVE, fromOffset: Limits.FROM_NOW });
  assert.equal([now.length, (now[0] as { generation: number }).generation], [2, 2]);
  // Further than root learnt (the client read more than the last STATE said): its own offset, no refusal.
  const past = attachAnswer(record, { role: Role.CONTROL, fromOffset: 150n });
  assert.equal([past.length, (past[0] as { oldest: bigint }).oldest, (past[0] as { next: bigint }).next], [2, 150n, 150n]);
});

test('STOP_SESSION: STOPPED with the kept end', () => {
  const frame = stopAnswer(ended(1));
  assert.equal(frame, { type: 'stopped', end: { code: 2, status: 15, result: 'timeout', accounting: ACCOUNTING } });
  encodeFrame(frame, 3);
});

test('the bound: past limits.maxKept, the soonest to be forgotten go', () => {
  const records = [ended(1, { untilMs: 30_000 }), ended(2, { untilMs: 90_000 }), ended(3, { untilMs: 60_000 })];
  assert.equal(overBound(records, 2).map((one) => one.session.label), ['s1']);
  assert.equal(overBound(records, 3), []);
  assert.equal(overBound(records, 0).length, 3);
});

function table(options: { files?: Map<number, EndedRecord | string>; max?: number; maxKeepMs?: number } = {}) {
  let now = 10_000;
  const files = options.files ?? new Map<number, EndedRecord | string>();
  const logs: string[] = [];
  const ends = new KeptEnds({
    store: {
      endedIds: () => [...files.keys()],
      readEnded: (id) => {
        const file = files.get(id);
        return file === undefined ? { why: 'it has no ended record' } : typeof file === 'string' ? { why: file } : { ended: file };
      },
      removeEnded: (id) => void files.delete(id),
    },
    unitPrefix: PREFIX,
    maxKept: () => options.max ?? 16,
    maxKeepMs: () => options.maxKeepMs ?? 86_400_000,
    log: (_level, message) => void logs.push(message),
    now: () => now,
  });
  return { ends, files, logs, at: (ms: number) => (now = ms) };
}

test("a worker's report is checked as untrusted: held when valid and its own unit's, else logged and dropped", () => {
  const { ends, logs } = table();
  const record = ended(1);
  const from = (unit: string | undefined, keepGranted = true) => ({ unit, keepGranted });
  ends.add(JSON.parse(JSON.stringify(record)), from(record.session.unit));
  assert.is(ends.count, 1);
  assert.ok(ends.has(record.session.sessionId));
  ends.add(JSON.parse(JSON.stringify(ended(2))), from(unitOf(3)));
  ends.add({ ...ended(4), end: { ...record.end, result: 'a b' } }, from(unitOf(4)));
  ends.add(ended(5), from(undefined));
  assert.is(ends.count, 1);
  assert.is(logs.length, 3, logs.join('\n'));
  // Only a worker whose keep was granted has a kept session's end to report.
  ends.add(ended(6), from(unitOf(6), false));
  assert.is(ends.count, 1);
  assert.match(logs[3]!, /granted no keep/);
  ends.close();
});

test('LIST sees what its scope reaches; ATTACH or STOP_SESSION takes it once, with its file', () => {
  const files = new Map<number, EndedRecord | string>();
  const mine = ended(1);
  const other = ended(2, {}, null);
  files.set(mine.session.sessionId, mine);
  files.set(other.session.sessionId, other);
  const { ends } = table({ files });
  ends.load();
  const service = { sees: 'service' as const, service: 'opencode.service' };
  assert.equal(ends.entries(service).map((entry) => entry.label), ['s1']);
  assert.equal(ends.entries({ sees: 'every' }).map((entry) => entry.label).sort(), ['s1', 's2']);
  assert.is(ends.take(other.session.sessionId, service), undefined, 'outside the scope: not there');
  assert.equal(ends.take(mine.session.sessionId, service), mine);
  assert.is(ends.take(mine.session.sessionId, service), undefined, 'forgotten once answered');
  assert.not.ok(files.has(mine.session.sessionId), 'its file removed');
  assert.ok(files.has(other.session.sessionId));
  ends.close();
});

test('at load: what does not check out and what is past its time are removed, each said; the bound holds', () => {
  const files = new Map<number, EndedRecord | string>([
    [1, 'its ended record is not JSON'],
    [ended(2).session.sessionId, ended(2, { untilMs: 9_000 })],
    [ended(3).session.sessionId, ended(3, { untilMs: 20_000 })],
    [ended(4).session.sessionId, ended(4, { untilMs: 30_000 })],
  ]);
  const { ends, logs, at } = table({ files, max: 1 });
  ends.load();
  assert.equal(ends.entries({ sees: 'every' }).map((entry) => entry.label), ['s4']);
  assert.equal([...files.keys()], [ended(4).session.sessionId]);
  assert.ok(logs.some((line) => /not JSON/.test(line)) && logs.some((line) => /limits.maxKept/.test(line)), logs.join('\n'));
  at(30_000);
  assert.equal(ends.entries({ sees: 'every' }), [], 'gone at its time');
  assert.is(files.size, 0);
  ends.close();
});

test('time: an end seen in the future is refused; one kept past what its keep allows from now (or session.maxKeepMs now) is cut to it, at load and from a worker', () => {
  const far = ended(1, { untilMs: Number.MAX_SAFE_INTEGER });
  const future = ended(2, { endedAtMs: 10_001, untilMs: 20_000 });
  const files = new Map<number, EndedRecord | string>([
    [far.session.sessionId, far],
    [future.session.sessionId, future],
  ]);
  const { ends, logs } = table({ files });
  ends.load();
  assert.equal(ends.entries({ sees: 'every' }).map((entry) => [entry.label, entry.deadlineMs]), [['s1', 10_000 + 60_000]]);
  assert.ok(logs.some((line) => /endedAtMs \(10001\) is in the future/.test(line)), logs.join('\n'));
  assert.not.ok(files.has(future.session.sessionId), 'its file removed');
  ends.add(ended(3, { untilMs: 2 ** 40 }), { unit: unitOf(3), keepGranted: true });
  ends.add(ended(4, { endedAtMs: 99_999 }), { unit: unitOf(4), keepGranted: true });
  assert.equal(ends.entries({ sees: 'every' }).map((entry) => [entry.label, entry.deadlineMs]).sort(), [['s1', 70_000], ['s3', 70_000]]);
  ends.close();
  // A lower session.maxKeepMs since applies to what is read back.
  const lower = table({ files: new Map([[far.session.sessionId, far]]), maxKeepMs: 5_000 });
  lower.ends.load();
  assert.equal(lower.ends.entries({ sees: 'every' }).map((entry) => entry.deadlineMs), [15_000]);
  lower.ends.close();
});

// What a root process without capabilities could plant in the store (docs/security.md): a directory, a
// FIFO, a symlink to /dev/zero, under an ended record's name. The broker's start reads on, at once.
test('at load, with the real store: planted entries are logged and left or removed, never thrown or waited on; a valid end beside them is held', () => {
  const base = mkdtempSync(join(tmpdir(), 'kept-ends-'));
  try {
    const left: string[] = [];
    const store = new KeptStore(base, (name) => void left.push(name));
    const valid = ended(9, { endedAtMs: Date.now() - 1000, untilMs: Date.now() + 60_000 });
    store.writeEnded(valid);
    mkdirSync(store.endedPath(1));
    execFileSync('mkfifo', [store.endedPath(2)]);
    symlinkSync('/dev/zero', store.endedPath(3));
    const logs: string[] = [];
    const ends = new KeptEnds({ store, unitPrefix: PREFIX, maxKept: () => 16, maxKeepMs: () => 86_400_000, log: (_level, message) => void logs.push(message) });
    ends.load();
    assert.equal(ends.entries({ sees: 'every' }).map((entry) => entry.label), ['s9']);
    assert.is(logs.filter((line) => /is not kept/.test(line)).length, 3, logs.join('\n'));
    assert.equal(left, ['1.ended.json'], 'the directory is left, and said');
    assert.equal(readdirSync(base).sort(), ['1.ended.json', `${valid.session.sessionId}.ended.json`].sort());
    ends.close();
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test.run();
