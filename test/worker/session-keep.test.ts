// A session's kept part (session-keep.ts): the START's connection counted attached before it is
// watched, so one gone before the start was seen through is a detach after that attach (root's keep
// deadline arms), and a DETACHED that came before then is held, not dropped.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { KeptStore } from '../../src/kept-store/store.ts';
import { SessionKeep } from '../../src/worker/session-keep.ts';
import type { Started } from '../../src/worker/session-start.ts';

const started: Started = {
  mainPid: 3,
  unit: 'opencode-pty-session-0000000000001234aaaa.service',
  frame: { type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], keepMs: 500, retainBytes: 0, label: 'x' },
  sessionId: 0x1234,
  cwd: '/',
  programPid: 4,
};

function keep(events: string[]): SessionKeep {
  const part = new SessionKeep({
    writeTimeoutMs: 1000,
    attached: () => void events.push('attach'),
    detached: () => void events.push('detach'),
    kept: () => void events.push('kept'),
    log: () => undefined,
  });
  part.planned({ keepMs: 500, retainBytes: 4096, label: 'x' });
  return part;
}

/** A START connection whose client has hung up already, as the worker sees it. */
async function hungUp(): Promise<FdSocket> {
  const [ours, theirs] = native().socketpair();
  const socket = new FdSocket(ours);
  socket.on('error', () => undefined);
  const seen = new Promise<void>((resolve) => socket.once('hangup', () => resolve()));
  socket.watchHangup();
  closeQuietly(theirs);
  await seen;
  return socket;
}

test('a START connection gone before the start was seen through: counted attached, then detached (the deadline arms), never left attached', async () => {
  const events: string[] = [];
  const part = keep(events);
  const client = await hungUp();
  part.started(started, client, undefined, 1);
  assert.equal(events, ['attach', 'kept', 'detach']);
  assert.is(part.side!.connections.attached, 0);
  part.closeAll();
});

test('a DETACHED of conn 0 before the start was seen through is held, then counts as that connection\'s detach', () => {
  const events: string[] = [];
  const part = keep(events);
  const [ours, theirs] = native().socketpair();
  const client = new FdSocket(ours);
  client.on('error', () => undefined);
  part.helperDetached({ conn: 0, reason: 'client-gone', code: 0, remainder: Buffer.alloc(0), text: '' });
  assert.equal(events, []);
  part.started(started, client, undefined, 1);
  assert.equal(events, ['attach', 'kept', 'detach']);
  assert.is(part.side!.connections.attached, 0);
  part.closeAll();
  closeQuietly(theirs);
});

test('an adopted session: its record rewritten with the deadline it was adopted with; a helper of another dialect is let be (our end closed, a line saying so), one of ours is kept; a release leaves the record', async () => {
  const { HELPER_DIALECT } = await import('../../src/control/helper-channel.ts');
  const dir = mkdtempSync(join(tmpdir(), 'session-keep-'));
  try {
    const store = new KeptStore(dir);
    const lines: string[] = [];
    const events: string[] = [];
    const part = new SessionKeep({ store, writeTimeoutMs: 1000, attached: () => undefined, detached: () => undefined, kept: () => void events.push('kept'), log: (line) => void lines.push(line) });
    const unit = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
    const record = { format: 1 as const, unit, sessionId: parseInt('0123456789abc', 16), keepMs: 1000, retainBytes: 4096, label: '', program: 'sh', cwd: '/', startedAtMs: 1, rows: 24, cols: 80, programPid: 2, mainPid: 3, origin: 1 as const, service: null, detachedSinceMs: null };
    let closed = 0;
    const link = { close: () => void (closed += 1) } as never;
    part.adopted(record, link, 50_000);
    assert.equal(events, ['kept']);
    assert.equal(store.read(unit, record.sessionId, 'opencode-pty-'), { record: { ...record, detachedSinceMs: 49_000 } }, 'detached since the deadline less its keep');
    part.helperDialect(HELPER_DIALECT, link);
    assert.is(closed, 0, 'our own dialect: spoken');
    part.helperDialect(4, link);
    assert.is(closed, 0, 'dialect 4 (the rendezvous; 5 only adds what comes before a session): spoken');
    part.helperDialect(HELPER_DIALECT + 1, link);
    assert.is(closed, 1, 'a later one: let be');
    part.helperDialect(3, link);
    assert.is(closed, 2, 'one without the rendezvous: let be');
    assert.match(lines.join('\n'), /dialect 6, this worker 5: the session runs on untouched until its deadline/);
    assert.ok(part.releasesAt({ phase: 'running', kept: true, stopping: false, report: undefined }));
    assert.not.ok(part.releasesAt({ phase: 'running', kept: true, stopping: true, report: undefined }), 'a session being stopped is not released');
    assert.equal(store.ids(), [record.sessionId], 'the record stays for the next worker');
    part.ended();
    assert.equal(store.ids(), [], 'gone with the session');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an end kept past the unit: written for the next broker until the deadline, reported, and left when the session\'s other files go', () => {
  const dir = mkdtempSync(join(tmpdir(), 'session-keep-'));
  try {
    const store = new KeptStore(dir);
    const reported: unknown[] = [];
    const part = new SessionKeep({ store, writeTimeoutMs: 1000, attached: () => undefined, detached: () => undefined, kept: () => undefined, keptEnded: (ended) => void reported.push(ended), log: () => undefined });
    const unit = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
    const record = { format: 1 as const, unit, sessionId: parseInt('0123456789abc', 16), keepMs: 60_000, retainBytes: 4096, label: '', program: 'sh', cwd: '/', startedAtMs: 1, rows: 24, cols: 80, programPid: 2, mainPid: 3, origin: 1 as const, service: null, detachedSinceMs: null };
    const deadlineAt = Date.now() + 60_000;
    part.adopted(record, { close: () => undefined } as never, deadlineAt);
    part.arm(() => undefined);
    const end = { code: 2, status: 9, result: 'timeout', accounting: { cpuUsageNsec: null, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: null, outputBytes: null, durationUsec: null } };
    part.keepEnd(end);
    const read = store.readEnded(record.sessionId, 'opencode-pty-');
    assert.ok('ended' in read, JSON.stringify(read));
    const ended = (read as { ended: { untilMs: number; end: unknown; next: string; session: { detachedSinceMs: number } } }).ended;
    assert.equal([ended.untilMs, ended.end, ended.next, ended.session.detachedSinceMs], [deadlineAt, end, '0', deadlineAt - 60_000]);
    assert.equal(reported, [ended]);
    part.closeAll();
    part.ended();
    assert.equal(readdirSync(dir), [`${record.sessionId}.ended.json`], 'its record gone, its end kept');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a kept START that ends before anything recorded it: its unit's id names the files that go", () => {
  const dir = mkdtempSync(join(tmpdir(), 'session-keep-'));
  try {
    const store = new KeptStore(dir);
    const unit = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
    const id = parseInt('0123456789abc', 16);
    writeFileSync(store.socketPath(id), ''); // as the rendezvous bound it
    const part = new SessionKeep({ store, unit: () => unit, unitPrefix: 'opencode-pty-', writeTimeoutMs: 1000, attached: () => undefined, detached: () => undefined, kept: () => undefined, log: () => undefined });
    part.planned({ keepMs: 500, retainBytes: 4096, label: 'x' });
    part.ended();
    assert.equal(readdirSync(dir), [], 'its socket is gone');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a session started here: its dialect is never judged (a start speaks ours)', () => {
  let closed = 0;
  const part = keep([]);
  part.helperDialect(99, { close: () => void (closed += 1) } as never);
  assert.is(closed, 0);
});

test.run();
