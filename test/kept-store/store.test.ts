// Root's directory of kept sessions (src/kept-store/store.ts): created 0700, refused when it is not
// root's alone; records replaced whole; a session's files removed together.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KeptStore, MAX_RECORD_BYTES } from '../../src/kept-store/store.ts';
import type { KeptRecord } from '../../src/kept-store/record.ts';
import type { EndedRecord } from '../../src/kept-store/ended-record.ts';

const UNIT = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const ID = parseInt('0123456789abc', 16);
const RECORD: KeptRecord = { format: 1, unit: UNIT, sessionId: ID, keepMs: 1000, retainBytes: 4096, label: '', program: 'sh', cwd: '/', startedAtMs: 1, rows: 24, cols: 80, programPid: 2, mainPid: 3, origin: 3, service: null, detachedSinceMs: null };

function inTemp(body: (base: string) => void): void {
  const base = mkdtempSync(join(tmpdir(), 'kept-store-'));
  try {
    body(base);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

test('ensure creates the directory 0700 and refuses one anyone else could enter, or a symlink', () => {
  inTemp((base) => {
    // Root's own directory: its check needs uid 0 (the test runner's, as the supervisor's).
    if (process.getuid?.() !== 0) return;
    const store = new KeptStore(join(base, 'kept'));
    store.ensure();
    store.ensure();
    chmodSync(store.dir, 0o755);
    assert.throws(() => store.ensure(), /mode 0700/);
    symlinkSync(base, join(base, 'link'));
    assert.throws(() => new KeptStore(join(base, 'link')).ensure(), /not a directory/);
  });
});

test('a record is written whole, read back, and every file of a session goes with remove; ids names what is there', () => {
  inTemp((base) => {
    const store = new KeptStore(base);
    store.write(RECORD);
    store.write({ ...RECORD, detachedSinceMs: 5 });
    assert.equal(store.read(UNIT, ID, 'opencode-pty-'), { record: { ...RECORD, detachedSinceMs: 5 } });
    writeFileSync(store.socketPath(ID), '');
    writeFileSync(join(base, `${ID}.json.77.tmp`), '{');
    writeFileSync(join(base, '99.sock'), '');
    assert.equal(store.ids().sort(), [99, ID].sort());
    store.remove(ID);
    assert.equal(readdirSync(base), ['99.sock']);
    assert.equal(store.read(UNIT, ID, 'opencode-pty-'), { why: 'it has no record' });
  });
});

test("an ended record outlives its session's other files: written whole, read back, listed apart, removed on its own", () => {
  inTemp((base) => {
    const store = new KeptStore(base);
    const ended: EndedRecord = { format: 1, session: { ...RECORD, detachedSinceMs: 4 }, end: { code: 1, status: 0, result: 'oom-kill', accounting: { cpuUsageNsec: null, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: null, outputBytes: null, durationUsec: null } }, next: '0', generation: 1, endedAtMs: 5, untilMs: 1004 };
    store.write(RECORD);
    writeFileSync(store.socketPath(ID), '');
    store.writeEnded(ended);
    assert.equal(store.readEnded(ID, 'opencode-pty-'), { ended });
    writeFileSync(join(base, `${ID}.ended.json.77.tmp`), '{');
    assert.equal(store.ids(), [ID], 'the session files alone');
    assert.equal(store.endedIds(), [ID]);
    store.remove(ID);
    assert.equal(readdirSync(base).sort(), [`${ID}.ended.json`, `${ID}.ended.json.77.tmp`], 'the session gone, its end kept');
    assert.equal(store.ids(), []);
    store.removeEnded(ID);
    assert.equal(readdirSync(base), []);
    assert.equal(store.readEnded(ID, 'opencode-pty-'), { why: 'it has no ended record' });
    writeFileSync(store.endedPath(ID), `{"pad":"${'x'.repeat(MAX_RECORD_BYTES)}"}`);
    assert.match((store.readEnded(ID, 'opencode-pty-') as { why: string }).why, /over/);
  });
});

test('a record far larger than ours is not read whole: refused by its size', () => {
  inTemp((base) => {
    const store = new KeptStore(base);
    writeFileSync(join(base, `${ID}.json`), `{"pad":"${'x'.repeat(MAX_RECORD_BYTES)}"}`);
    assert.equal(store.read(UNIT, ID, 'opencode-pty-'), { why: `its record is ${MAX_RECORD_BYTES + 10} bytes, over ${MAX_RECORD_BYTES}` });
  });
});

// What a root process without capabilities could plant in the directory (docs/security.md): each is
// refused by what its descriptor is, at once, and a removal that cannot be made is told, never thrown.
test('a planted directory, FIFO, symlink or file not of root is refused at once; a directory left by remove is told, not thrown', () => {
  inTemp((base) => {
    const left: string[] = [];
    const store = new KeptStore(base, (name, why) => void left.push(`${name}: ${why}`));
    const PREFIX = 'opencode-pty-';
    mkdirSync(store.endedPath(1));
    mkdirSync(store.recordPath(ID));
    assert.match((store.readEnded(1, PREFIX) as { why: string }).why, /not a regular file/);
    assert.match((store.read(UNIT, ID, PREFIX) as { why: string }).why, /not a regular file/);
    store.removeEnded(1);
    store.remove(ID);
    assert.equal(left.length, 2, left.join('\n'));
    assert.match(left[0]!, /^1\.ended\.json: /);
    // A FIFO: its open or its read would wait for a writer for good.
    execFileSync('mkfifo', [store.endedPath(2)]);
    assert.match((store.readEnded(2, PREFIX) as { why: string }).why, /not a regular file/);
    // A symlink, to a FIFO or to /dev/zero (read until memory runs out), or even to a valid record.
    symlinkSync(store.endedPath(2), store.endedPath(3));
    symlinkSync('/dev/zero', store.endedPath(4));
    writeFileSync(join(base, 'real.json'), JSON.stringify(RECORD));
    symlinkSync(join(base, 'real.json'), store.recordPath(5));
    for (const why of [store.readEnded(3, PREFIX), store.readEnded(4, PREFIX), store.read(UNIT, 5, PREFIX)]) assert.match((why as { why: string }).why, /is a symlink/);
    store.removeEnded(2);
    store.removeEnded(3);
    store.removeEnded(4);
    assert.equal(left.length, 2, 'a FIFO and symlinks go');
    // Root's own file only (the runner is root, as the supervisor).
    if (process.getuid?.() === 0) {
      writeFileSync(store.recordPath(ID + 1), JSON.stringify(RECORD));
      chownSync(store.recordPath(ID + 1), 1000, 1000);
      assert.match((store.read(UNIT, ID + 1, PREFIX) as { why: string }).why, /not root's \(uid 1000\)/);
    }
  });
});

test('a write over a planted directory fails with its own error, and leaves no temporary file', () => {
  inTemp((base) => {
    const store = new KeptStore(base);
    mkdirSync(store.recordPath(ID));
    assert.throws(() => store.write(RECORD), (error: NodeJS.ErrnoException) => error.code === 'EISDIR' && error.syscall === 'rename');
    assert.equal(readdirSync(base), [`${ID}.json`]);
  });
});

test('a write that fails leaves neither its temporary file nor the old record, which no longer says what root knows', () => {
  inTemp((base) => {
    const store = new KeptStore(base);
    store.write(RECORD);
    // A record that cannot be serialised stands in for a full /run: the write throws midway.
    const broken = { ...RECORD, label: 1n } as unknown as KeptRecord;
    assert.throws(() => store.write(broken));
    assert.equal(readdirSync(base), []);
  });
});

test.run();
