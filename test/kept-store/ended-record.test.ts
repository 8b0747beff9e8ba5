// The end root keeps of a kept session past its unit (src/kept-store/ended-record.ts): made only while
// the session's keep deadline runs, read back as untrusted input, and its time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkEnded, endedExpired, endedRecordOf, parseEnded, type EndedRecord } from '../../src/kept-store/ended-record.ts';
import type { KeptRecord } from '../../src/kept-store/record.ts';
import { endedEntry } from '../../src/broker/kept-ended.ts';
import { encodeFrame, sessionsFrame } from '../../src/protocol/index.ts';

const PREFIX = 'opencode-pty-';
const UNIT = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const ID = parseInt('0123456789abc', 16);
const SESSION: KeptRecord = { format: 1, unit: UNIT, sessionId: ID, keepMs: 60_000, retainBytes: 4096, label: 'build', program: 'sh', cwd: '/', startedAtMs: 1000, rows: 24, cols: 80, programPid: 42, mainPid: 41, origin: 1, service: 'opencode.service', detachedSinceMs: 2000 };
const ACCOUNTING = { cpuUsageNsec: 12_000_000, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: null, outputBytes: null, durationUsec: 1_500_000 };
const END = { code: 2, status: 15, result: 'timeout', accounting: ACCOUNTING };
const ENDED: EndedRecord = { format: 1, session: SESSION, end: END, next: '4', generation: 1, endedAtMs: 5000, untilMs: 62_000 };

test('made while the keep deadline runs, with the last offset and generation root learnt', () => {
  assert.equal(endedRecordOf(SESSION, END, { next: 4n, generation: 1 }, 5000, 62_000), ENDED);
  assert.equal(endedRecordOf(SESSION, END, undefined, 5000, 62_000), { ...ENDED, next: '0' }, 'no STATE ever: offset 0, generation 1');
  assert.is(endedRecordOf(SESSION, END, { next: 4n, generation: 3 }, 5000, 62_000)?.generation, 3);
});

test('not made once the deadline passed or with none armed: the session ends as its deadline ends it', () => {
  assert.is(endedRecordOf(SESSION, END, undefined, 5000, undefined), undefined);
  assert.is(endedRecordOf(SESSION, END, undefined, 5000, 5000), undefined);
  assert.is(endedRecordOf(SESSION, END, undefined, 5000, 4000), undefined);
});

test('read back whole, with the known fields alone', () => {
  assert.equal(parseEnded(JSON.stringify(ENDED), ID, PREFIX), { ended: ENDED });
  const parsed = parseEnded(JSON.stringify({ ...ENDED, extra: 1, session: { ...SESSION, extra: 2 } }), ID, PREFIX);
  assert.equal(parsed, { ended: ENDED });
});

test('what is not taken: torn JSON, another format or id, a bad session, an end EXIT could not carry, offsets and times out of range', () => {
  const why = (value: unknown, id = ID) => {
    const checked = typeof value === 'string' ? parseEnded(value, id, PREFIX) : checkEnded(value, id, PREFIX);
    return 'why' in checked ? checked.why : 'taken';
  };
  assert.match(why(JSON.stringify(ENDED).slice(0, 30)), /not JSON/);
  assert.match(why(null), /not an object/);
  assert.match(why([]), /not an object/);
  assert.match(why({ ...ENDED, format: 2 }), /format 2/);
  assert.match(why(ENDED, ID + 1), /id is not its own/);
  assert.match(why({ ...ENDED, session: null }), /no session/);
  assert.match(why({ ...ENDED, session: { ...SESSION, unit: 'sshd.service' } }), /another unit/);
  assert.match(why({ ...ENDED, session: { ...SESSION, keepMs: 0 } }), /keepMs/);
  assert.match(why({ ...ENDED, session: { ...SESSION, programPid: 0 } }), /pids/);
  assert.match(why({ ...ENDED, end: { ...END, code: 0 } }), /end code/);
  assert.match(why({ ...ENDED, end: { ...END, code: 4 } }), /end code/);
  assert.match(why({ ...ENDED, end: { ...END, status: 2 ** 31 } }), /end status/);
  assert.match(why({ ...ENDED, end: { ...END, result: 'time\nout' } }), /end result/);
  assert.match(why({ ...ENDED, end: { ...END, result: '' } }), /end result/);
  assert.match(why({ ...ENDED, end: { ...END, result: 'x'.repeat(256) } }), /end result/);
  assert.match(why({ ...ENDED, end: { ...END, accounting: { ...ACCOUNTING, tasks: -1 } } }), /tasks/);
  assert.match(why({ ...ENDED, end: { ...END, accounting: { ...ACCOUNTING, tasks: 2 ** 53 } } }), /tasks/);
  assert.match(why({ ...ENDED, end: { ...END, accounting: null } }), /end record/);
  assert.match(why({ ...ENDED, next: 4 }), /next/);
  assert.match(why({ ...ENDED, next: (2n ** 63n).toString() }), /next/);
  assert.match(why({ ...ENDED, next: '-1' }), /next/);
  assert.match(why({ ...ENDED, generation: 0 }), /generation/);
  assert.match(why({ ...ENDED, untilMs: ENDED.endedAtMs }), /untilMs/);
  assert.match(why({ ...ENDED, endedAtMs: -1 }), /endedAtMs/);
  assert.is(why({ ...ENDED, next: '00004' }), 'taken');
  assert.equal(checkEnded({ ...ENDED, next: '00004' }, ID, PREFIX), { ended: ENDED }, 'its offset written canonically');
});

test("a label LIST could not encode is refused; what is taken encodes in LIST", () => {
  for (const label of ['a\u0001b', '\u00e9'.repeat(200), 'x\ud800']) assert.match((checkEnded({ ...ENDED, session: { ...SESSION, label } }, ID, PREFIX) as { why: string }).why, /label/, JSON.stringify(label));
  const taken = checkEnded({ ...ENDED, session: { ...SESSION, label: '\u00e9'.repeat(128) } }, ID, PREFIX) as { ended: EndedRecord };
  const frame = sessionsFrame([endedEntry(taken.ended)]);
  assert.is(frame.sessions.length, 1);
  encodeFrame(frame, 3);
});

test('expired at its untilMs, not before', () => {
  assert.not.ok(endedExpired(ENDED, ENDED.untilMs - 1));
  assert.ok(endedExpired(ENDED, ENDED.untilMs));
});

test.run();
