// status's kept sessions: gathered through `cli.js ls --json` (a fake runner here), shown as ls's table or the reason.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { brokerRuns, formatKept, gatherKept } from '../../src/cli/kept-status.ts';
import type { KeptSession } from '../../src/client/index.ts';

const SESSION: KeptSession = {
  id: 913195858207996, state: 'attached', controllers: 1, observers: 1, rows: 24, cols: 80, programPid: 171, mainPid: 170,
  startedAtMs: 0, keepMs: 60_000, deadlineMs: null, oldest: 0, next: 4096, fresh: true, end: null, origin: 'main-pid', label: 'build', program: 'make', cwd: '/srv',
};

test('gatherKept runs this bundle\'s ls --json as a command and takes its list, or the reason on its stderr', () => {
  const ran: string[][] = [];
  const ok = gatherKept((file, args) => (ran.push([file, ...args]), { code: 0, stdout: JSON.stringify([SESSION]), stderr: '' }), '/opt/x', '/run/s.sock');
  assert.equal(ok, { sessions: [SESSION] });
  assert.equal(ran, [[process.execPath, '/opt/x/cli.js', 'ls', '--json', '--timeout', '2', '--socket', '/run/s.sock']]);
  const refused = gatherKept(() => ({ code: 125, stdout: '', stderr: 'opencode-ptyctl: only root and the client service may list (NOT_PERMITTED)\n' }), '/opt/x', '/s');
  assert.equal(refused, { error: 'only root and the client service may list (NOT_PERMITTED)' });
  assert.equal(gatherKept(() => ({ code: 0, stdout: 'garbage', stderr: '' }), '/opt/x', '/s'), { error: 'ls printed no list' });
  assert.equal(gatherKept(() => ({ code: 0, stdout: '{}', stderr: '' }), '/opt/x', '/s'), { error: 'ls printed no list' });
});

test('formatKept: the count and ls\'s table indented, attached or detached with the retained bytes; or why not', () => {
  const text = formatKept({ sessions: [SESSION, { ...SESSION, id: 7, state: 'detached', controllers: 0, observers: 0, deadlineMs: 30_000 }] }, 0);
  const lines = text.trimEnd().split('\n');
  assert.is(lines[0], 'kept sessions 2');
  assert.match(lines[1]!, /^ {2}ID +STATE/);
  assert.match(lines[2]!, /^ {2}913195858207996 +attached +main +build +make +171 +4\.0KiB +1\+1 +attached$/);
  assert.match(lines[3]!, /^ {2}7 +detached .* +0\+0 +in 30s$/);
  assert.is(formatKept({ sessions: [] }, 0), 'kept sessions 0\n');
  assert.is(formatKept({ error: 'no broker' }, 0), 'kept sessions unavailable (no broker)\n');
});

test('the broker is asked only while it runs (a LIST would socket-activate a stopped one)', () => {
  assert.equal(['active (running)', 'active', 'reloading', 'inactive (dead)', 'activating (start)', 'failed (Result: exit-code)', ''].map(brokerRuns), [true, true, true, false, false, false, false]);
});

test.run();
