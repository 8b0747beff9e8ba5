// Session-end accounting: systemd's figures to journal fields; unavailable is never zero.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { figuresFrom, logSessionEnd, sessionEndFields } from '../../src/worker/accounting.ts';

const MAX = 2n ** 64n - 1n;

test('figures systemd reports as UINT64_MAX, or not at all, are left out', () => {
  assert.equal(figuresFrom({ CPUUsageNSec: 12_000_000n, MemoryCurrent: MAX, TasksCurrent: 0n, IOReadBytes: MAX }), {
    CPU_USAGE_NSEC: 12_000_000n,
    TASKS_CURRENT: 0n,
  });
  assert.equal(figuresFrom(undefined), {});
});

test('the end fields: session, peer, result, exit, duration and the figures present', () => {
  const fields = sessionEndFields(
    { unit: 'u.service', peer: { pid: 7, uid: 4242 }, reason: 'exit', exit: { code: 1, status: 3, result: 'exit-code' }, bytesIn: 4n, bytesOut: 120n, program: 'sh', durationMs: 2500n },
    { CPU_USAGE_NSEC: 5n },
  );
  assert.equal(fields, {
    SESSION_UNIT: 'u.service',
    OBJECT_SYSTEMD_UNIT: 'u.service',
    OPENCODE_PTY_EVENT: 'session-end',
    PEER_PID: 7,
    PEER_UID: 4242,
    PROGRAM: 'sh',
    RESULT: 'exit-code',
    EXIT_CODE: 1,
    EXIT_STATUS: 3,
    ERROR_CODE: undefined,
    DURATION_MS: 2500n,
    BYTES_IN: 4n,
    BYTES_OUT: 120n,
    CPU_USAGE_NSEC: 5n,
  });
});

test('an error end names the wire code; the message says unavailable for what is missing', async () => {
  const lines: [string, string, Record<string, unknown> | undefined][] = [];
  await logSessionEnd({ unit: 'u.service', peer: { pid: 1, uid: 2 }, reason: 'shutdown', error: { wireCode: 11, message: 'x' } }, Promise.resolve({ CPU_USAGE_NSEC: 9n }), (level, message, fields) => lines.push([level, message, fields]));
  assert.is(lines.length, 1);
  assert.is(lines[0]![1], 'session u.service accounting: shutdown, cpu_usage_nsec=9 memory_current_bytes=unavailable tasks_current=unavailable io_read_bytes=unavailable io_write_bytes=unavailable bytes_in=unavailable bytes_out=unavailable');
  assert.is(lines[0]![2]!.ERROR_CODE, 'SHUTDOWN');
  await logSessionEnd({ unit: undefined, peer: { pid: 1, uid: 2 }, reason: 'error' }, Promise.resolve({}), () => assert.unreachable('no unit, no accounting line'));
});

test.run();
