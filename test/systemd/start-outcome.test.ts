// programRan: which failed start jobs still ran the program (Type=exec and a program that exits at once).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { programRan } from '../../src/systemd/start-outcome.ts';

test('a failed job whose program exited with its own status ran it', () => {
  assert.ok(programRan('failed', { code: 1, status: 7, result: 'exit-code' }));
  assert.ok(programRan('failed', { code: 1, status: 199, result: 'exit-code' }));
});

test('a failed job whose program a signal ended ran it', () => {
  assert.ok(programRan('failed', { code: 2, status: 9, result: 'signal' }));
  assert.ok(programRan('failed', { code: 3, status: 11, result: 'core-dump' }));
});

test("systemd's statuses (200 and up) are start failures", () => {
  for (const status of [200, 203, 217, 243, 244, 245, 255]) assert.not.ok(programRan('failed', { code: 1, status, result: 'exit-code' }), String(status));
});

test('other job results, or no exit read, are start failures', () => {
  assert.not.ok(programRan('timeout', { code: 1, status: 7, result: 'exit-code' }));
  assert.not.ok(programRan('canceled', { code: 1, status: 7, result: 'exit-code' }));
  assert.not.ok(programRan('dependency', { code: 1, status: 7, result: 'exit-code' }));
  assert.not.ok(programRan('failed', undefined));
  assert.not.ok(programRan('failed', { code: 0, status: 0, result: 'resources' }));
});

test.run();
