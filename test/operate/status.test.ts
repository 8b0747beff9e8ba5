// The human form of status: what a client names (its cwd, its program) and what the journal quotes
// reach the operator's terminal as text, never as terminal sequences or forged lines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatStatus, helperProgram, printable, sessionProgram, type Status } from '../../src/operate/status.ts';
import { sessionLimits } from '../../src/operate/session-limits.ts';

function status(session: { cwd: string | null; program: string[] | null; warm?: boolean }, journal: string): Status {
  return {
    socket: { unit: 'opencode-pty-supervisor.socket', state: 'active (listening)', listen: '/run/opencode-pty/supervisor.sock (Stream)', path: '/run/opencode-pty/supervisor.sock', mode: '0660', group: 'opencode-pty' },
    broker: { unit: 'opencode-pty-supervisor@broker.service', state: 'active (running)', mainPid: 10, since: 'Tue 2026-12-01', memoryBytes: '1048576', status: '1 sessions, 0 handshakes', sessionsServed: 1 },
    sessions: [{ unit: 'opencode-pty-session-0a.service', state: 'active', user: 'agent', mainPid: 11, warm: false, ...session, started: 'Tue 2026-12-01', cpuNsec: '1000000', memoryBytes: '65536', tasks: '2', limits: sessionLimits({}) }],
    recentErrors: [{ time: '2026-12-01T00:00:00.000Z', priority: 4, message: journal }],
  };
}

// ESC ] 0 ; … BEL sets the window title; ESC [ 2 J clears the screen; CSI (U+009B) in one character.
const HOSTILE = '/home/agent/work/\x1b]0;owned\x07\x1b[2J\n  opencode-pty-session-ff.service (active) user root pid 1\u009b31m\u202eexe.txt';

test('a hostile cwd, program and journal line: no control character reaches the terminal, no line is forged', () => {
  const text = formatStatus(status({ cwd: HOSTILE, program: ['/bin/sh', HOSTILE] }, `refused: ${HOSTILE}`));
  // Every character is printable, or the line break between lines.
  assert.not.match(text, /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/u);
  assert.is(text.split('\n').length, 13, text);
  assert.ok(text.includes('\\x1b]0;owned\\x07\\x1b[2J\\x0a'), text);
  assert.ok(text.includes('\\x9b31m\\u202eexe.txt'), text);
});

test('printable: ordinary text is unchanged, a backslash doubled (so no escape shown is the client\'s own)', () => {
  assert.is(printable('/home/agent/wörk dir'), '/home/agent/wörk dir');
  assert.is(printable('a\\x1b'), 'a\\\\x1b');
  assert.is(printable('["a\\\\b"]', false), '["a\\\\b"]');
});

test('helperProgram: the program and its arguments past the helper options, rows and cols', () => {
  assert.equal(helperProgram(['/opt/helper', '--protocol=1', '--write-timeout-ms=10', '24', '80', '/bin/sh', '-l']), ['/bin/sh', '-l']);
});

test('sessionProgram: a warm helper (--warm alone) is warm until it has a child, whose argv is then the program', () => {
  assert.equal(sessionProgram(['/opt/helper', '--warm'], null), { program: [], warm: true });
  assert.equal(sessionProgram(['/opt/helper', '--warm'], ['sh', '-c', 'x']), { program: ['sh', '-c', 'x'], warm: false });
  assert.equal(sessionProgram(['/opt/helper', '--protocol=3', '24', '80', 'sleep', '5'], ['sleep', '5']), { program: ['sleep', '5'], warm: false });
});

test('a warm unit is shown as warm, with no program or cwd line', () => {
  const text = formatStatus(status({ cwd: null, program: null, warm: true }, 'x'));
  assert.ok(text.includes('warm: waiting for a START'), text);
  assert.not.ok(text.includes('program '), text);
  // Counted apart: an idle broker's warm unit is no session.
  assert.ok(text.includes('\nsessions 0 (and 1 warm unit waiting for a START)\n'), text);
  const live = formatStatus(status({ cwd: '/w', program: ['make'] }, 'x'));
  assert.ok(live.includes('\nsessions 1\n'), live);
});

test('each session\'s profile, network and budgets, as its unit holds them', () => {
  const none = sessionLimits({ Description: 'opencode-pty session sh', PrivateNetwork: 'no', IPAddressDeny: '', RuntimeMaxUSec: 'infinity', MemoryMax: 'infinity', TasksMax: 'infinity', CPUQuotaPerSecUSec: 'infinity' });
  assert.equal(none, { profile: 'default', network: 'on', wallClock: null, memoryMax: null, tasksMax: null, cpuQuota: null });
  const limited = sessionLimits({ Description: 'opencode-pty session make (hardened)', PrivateNetwork: 'yes', RuntimeMaxUSec: '10min', MemoryMax: '1073741824', TasksMax: '64', CPUQuotaPerSecUSec: '500ms' });
  assert.equal(limited, { profile: 'hardened', network: 'off', wallClock: '10min', memoryMax: '1073741824', tasksMax: '64', cpuQuota: '500ms' });
  assert.is(sessionLimits({ IPAddressDeny: '0.0.0.0/0 ::/0' }).network, 'host-loopback');
  const text = formatStatus({ ...status({ cwd: '/w', program: ['make'] }, ''), sessions: [{ ...status({ cwd: '/w', program: ['make'] }, '').sessions[0]!, limits: limited }] });
  assert.ok(text.includes('    profile hardened, network off, time 10min, memory 1073741824, tasks 64, cpu 500ms\n'), text);
});

test.run();
