// notify helpers: what is sent where, the no-op outside systemd, and the watchdog interval rules.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { notify, ready, status, stopping, watchdog, watchdogIntervalMs } from '../../src/systemd/notify.ts';
import { throwsCode } from './helpers.ts';

function recorder(): { sent: Array<[string, string]>; send: (path: string, state: string) => void } {
  const sent: Array<[string, string]> = [];
  return { sent, send: (path, state) => sent.push([path, state]) };
}

test('sends each state to NOTIFY_SOCKET, path or abstract name', () => {
  const { sent, send } = recorder();
  assert.ok(ready({ NOTIFY_SOCKET: '/run/systemd/notify' }, send));
  assert.ok(status('serving 2 sessions\nsecond line', { NOTIFY_SOCKET: '@abstract' }, send));
  assert.ok(stopping({ NOTIFY_SOCKET: '/n' }, send));
  assert.ok(watchdog({ NOTIFY_SOCKET: '/n' }, send));
  assert.ok(notify('EXTEND_TIMEOUT_USEC=5000000', { NOTIFY_SOCKET: '/n' }, send));
  assert.equal(sent, [
    ['/run/systemd/notify', 'READY=1'],
    ['@abstract', 'STATUS=serving 2 sessions second line'],
    ['/n', 'STOPPING=1'],
    ['/n', 'WATCHDOG=1'],
    ['/n', 'EXTEND_TIMEOUT_USEC=5000000'],
  ]);
});

test('without NOTIFY_SOCKET nothing is sent and the result is false', () => {
  const { sent, send } = recorder();
  assert.is(ready({}, send), false);
  assert.is(notify('READY=1', { NOTIFY_SOCKET: '' }, send), false);
  assert.equal(sent, []);
});

test('a NOTIFY_SOCKET that is neither a path nor an abstract name is refused', () => {
  const { sent, send } = recorder();
  throwsCode(() => ready({ NOTIFY_SOCKET: 'relative/sock' }, send), 'NOTIFY_INVALID');
  assert.equal(sent, []);
});

test('watchdogIntervalMs: WATCHDOG_USEC in ms, for this PID only, off when unset, zero or malformed', () => {
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: '30000000' }, 42), 30_000);
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '42' }, 42), 30_000);
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '43' }, 42), undefined);
  assert.is(watchdogIntervalMs({ WATCHDOG_USEC: '500' }, 42), 1, 'sub-millisecond rounds up, never to 0');
  for (const WATCHDOG_USEC of [undefined, '', '0', '-5', '1e6', '12abc', '99999999999999999999']) {
    assert.is(watchdogIntervalMs({ WATCHDOG_USEC }, 42), undefined, String(WATCHDOG_USEC));
  }
});

test.run();
