// A kept session's record (src/kept-store/record.ts): what the next broker takes on trust, and the
// deadline it reckons from it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { adoptionDeadline, boundKeep, parseRecord, type KeptRecord } from '../../src/kept-store/record.ts';

const PREFIX = 'opencode-pty-';
const UNIT = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const RECORD: KeptRecord = {
  format: 1,
  unit: UNIT,
  sessionId: parseInt('0123456789abc', 16),
  keepMs: 60_000,
  retainBytes: 2 << 20,
  label: 'build',
  program: 'sh',
  cwd: '/home/u',
  startedAtMs: 1_700_000_000_000,
  rows: 24,
  cols: 80,
  programPid: 42,
  mainPid: 41,
  origin: 1,
  service: 'opencode.service',
  detachedSinceMs: 1_700_000_100_000,
};

test('a record written whole is read back', () => {
  assert.equal(parseRecord(JSON.stringify(RECORD), UNIT, PREFIX), { record: RECORD });
  assert.equal(parseRecord(JSON.stringify({ ...RECORD, service: null, detachedSinceMs: null }), UNIT, PREFIX), { record: { ...RECORD, service: null, detachedSinceMs: null } });
});

test('a field the record does not know is not carried on, whatever its name', () => {
  const json = JSON.stringify({ ...RECORD, extra: 'x', toString: 1 }).replace('{', '{"__proto__":{"polluted":true},');
  const parsed = parseRecord(json, UNIT, PREFIX);
  assert.equal(parsed, { record: RECORD });
  assert.equal(Object.keys((parsed as { record: KeptRecord }).record).sort(), Object.keys(RECORD).sort());
  assert.is(Object.getPrototypeOf((parsed as { record: KeptRecord }).record), Object.prototype);
});

test("an adopted session's keep is the lesser of its record's and session.maxKeepMs now", () => {
  assert.is(boundKeep(RECORD, 10_000).keepMs, 10_000, 'a limit lowered since the start applies');
  assert.is(boundKeep(RECORD, 600_000), RECORD, 'a higher one does not lengthen it');
  assert.is(boundKeep(RECORD, 0).keepMs, 1, 'none kept now: its deadline is at once, its record still valid');
  assert.ok('record' in parseRecord(JSON.stringify(boundKeep(RECORD, 0)), UNIT, PREFIX));
  assert.is(adoptionDeadline(boundKeep(RECORD, 10_000), 0), RECORD.detachedSinceMs! + 10_000);
});

test('what is not taken: torn JSON, another unit or id, another format, any field out of its bounds (each says why)', () => {
  const why = (json: string, unit = UNIT) => {
    const parsed = parseRecord(json, unit, PREFIX);
    return 'why' in parsed ? parsed.why : 'taken';
  };
  assert.match(why(JSON.stringify(RECORD).slice(0, 40)), /not JSON/);
  assert.match(why('null'), /not an object/);
  assert.match(why(JSON.stringify({ ...RECORD, format: 2 })), /format 2/);
  assert.match(why(JSON.stringify(RECORD), 'opencode-pty-session-ffffffffffffffffffffffffffffffff.service'), /another unit/);
  assert.match(why(JSON.stringify({ ...RECORD, sessionId: RECORD.sessionId + 1 })), /id/);
  const bad: [keyof KeptRecord, unknown][] = [
    ['keepMs', 0],
    ['keepMs', 2 ** 31],
    ['retainBytes', 100],
    ['label', 'x'.repeat(257)],
    ['program', 5],
    ['cwd', 'a\0b'],
    ['rows', 0],
    ['origin', 9],
    ['service', 7],
    ['detachedSinceMs', -1],
    ['detachedSinceMs', 1.5],
  ];
  for (const [field, value] of bad) assert.match(why(JSON.stringify({ ...RECORD, [field]: value })), new RegExp(field), `${field} ${JSON.stringify(value)}`);
});

test('the deadline: keepMs after the recorded detach; a session attached when its supervisor went gets its whole keep from its adoption', () => {
  assert.is(adoptionDeadline(RECORD, 1_700_000_200_000), RECORD.detachedSinceMs! + RECORD.keepMs);
  assert.is(adoptionDeadline({ ...RECORD, detachedSinceMs: null }, 1_700_000_200_000), 1_700_000_200_000 + RECORD.keepMs);
  // Past already: due at once (the worker's timer fires with a delay of 0).
  assert.ok(adoptionDeadline(RECORD, 1_800_000_000_000) < 1_800_000_000_000);
});

test("a label LIST could not carry is refused as the protocol refuses it: control characters, over 256 UTF-8 bytes, a lone surrogate (in program and cwd too)", () => {
  const why = (over: Partial<Record<keyof KeptRecord, unknown>>) => {
    const parsed = parseRecord(JSON.stringify({ ...RECORD, ...over }), UNIT, PREFIX);
    return 'why' in parsed ? parsed.why : 'taken';
  };
  for (const label of ['a\u0001b', 'a\u009bb', '\u007f', '\u00e9'.repeat(200), 'x\ud800']) assert.match(why({ label }), /label/, JSON.stringify(label));
  assert.match(why({ program: 'x\udc00' }), /program/);
  assert.match(why({ cwd: '/\ud800' }), /cwd/);
  assert.is(why({ label: '\u00e9'.repeat(128) }), 'taken', '256 bytes: the limit itself');
  assert.is(why({ label: '\u{1f600}' }), 'taken', 'a pair is no lone surrogate');
});

test.run();
