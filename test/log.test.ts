// Log lines: priorities, structured fields in the journal's native form and on stderr.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLogger, fieldPairs, journalEntry, sessionFields, stderrLine, wireCodeName } from '../src/log.ts';

test('the old two-argument call still writes sd-daemon prefixed lines, one per message line', () => {
  const lines: string[] = [];
  const log = createLogger('broker', (line) => lines.push(line));
  log('notice', 'one\ntwo');
  assert.equal(lines, ['<5>broker: one\n', '<5>broker: two\n']);
});

test('fields ride along on stderr as KEY=value, quoted when they hold spaces', () => {
  assert.is(stderrLine('worker', 'info', 'ended', { SESSION_UNIT: 'u.service', PROGRAM: 'a b', PEER_PID: 7 }), '<6>worker: ended SESSION_UNIT=u.service PROGRAM="a b" PEER_PID=7\n');
});

test('absent figures are left out, never written as zero or empty', () => {
  assert.equal(fieldPairs({ MEMORY_CURRENT: undefined, TASKS: null, CPU_NSEC: 0 }), [['CPU_NSEC', '0']]);
});

test('field names the journal would refuse or treat as trusted are dropped; newlines never split a field', () => {
  assert.equal(fieldPairs({ _PID: 1, lower: 2, GOOD: 'a\nb' }), [['GOOD', 'a b']]);
});

test('a journal entry carries the message, priority, identifier and fields as KEY=value lines', () => {
  assert.is(
    journalEntry('broker', 'warning', 'refused pid 9', { REFUSAL: 'NOT_CLIENT', PEER_PID: 9 }),
    'MESSAGE=broker: refused pid 9\nPRIORITY=4\nSYSLOG_IDENTIFIER=opencode-pty\nOPENCODE_PTY_COMPONENT=broker\nREFUSAL=NOT_CLIENT\nPEER_PID=9\n',
  );
});

test('lines go to the journal when it takes them and to stderr when it refuses', () => {
  const entries: string[] = [];
  const lines: string[] = [];
  let full = false;
  const log = createLogger('worker', {
    stderr: (line) => lines.push(line),
    journal: (entry) => {
      if (full) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
      entries.push(entry);
    },
  });
  log('info', 'first', sessionFields('x.service'));
  full = true;
  log('info', 'second');
  assert.is(entries.length, 1);
  assert.match(entries[0]!, /^SESSION_UNIT=x\.service$/m);
  assert.match(entries[0]!, /^OBJECT_SYSTEMD_UNIT=x\.service$/m);
  assert.equal(lines, ['<6>worker: second\n']);
});

test('sessionFields is empty without a unit', () => {
  assert.equal(sessionFields(undefined), {});
});

test('wire codes by name for REFUSAL and ERROR_CODE', () => {
  assert.is(wireCodeName(3), 'AUTHENTICATION');
  assert.is(wireCodeName(11), 'SHUTDOWN');
  assert.is(wireCodeName(99), undefined);
});

test.run();
