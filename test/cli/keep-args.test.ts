// Kept sessions on the command line, as pure functions: run --keep/--label, ls and attach, the detach key, ls's table.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SOCKET, parseCommandLine } from '../../src/cli/run-args.ts';
import { durationText, parseDuration } from '../../src/cli/keep-args.ts';
import { DetachKeyFilter } from '../../src/cli/detach-key.ts';
import { bytesText, deadlineText, formatSessionTable } from '../../src/cli/session-table.ts';
import type { KeptSession } from '../../src/client/index.ts';

test('run --keep DURATION in every unit, with --label; without --keep no keep field at all', () => {
  const command = parseCommandLine(['run', '--keep', '10m', '--label=dev server', 'npm', 'run', 'dev'], {});
  assert.ok(command.kind === 'run');
  assert.equal(command.keep, { keepMs: 600_000, label: 'dev server' });
  assert.equal(command.argv, ['npm', 'run', 'dev']);
  const bare = parseCommandLine(['run', '--keep=90', 'x'], {});
  assert.equal(bare.kind === 'run' && bare.keep, { keepMs: 90_000, label: '' }, 'a bare number is seconds');
  assert.not.ok('keep' in parseCommandLine(['run', 'x'], {}));
  for (const [text, ms] of [['500ms', 500], ['1.5h', 5_400_000], ['2d', 172_800_000], ['0.5s', 500], ['24d', 2_073_600_000]] as const) {
    assert.is(parseDuration(text), ms, text);
  }
  assert.equal([600_000, 90_000, 1500, 86_400_000, 5_400_000].map(durationText), ['10m', '90s', '1500ms', '1d', '90m']);
  for (const bad of ['', '10x', '-1s', '0', '0ms', '25d', '50d', '1e3', 'm']) assert.type(parseDuration(bad), 'string', bad);
});

test('run --keep usage errors: a bad duration, a label without --keep, a label with control characters or too long', () => {
  const cases: [string[], string][] = [
    [['run', '--keep', 'soon', 'x'], '--keep needs a duration'],
    [['run', '--keep', '60d', 'x'], 'about 24.8 days'],
    [['run', '--keep', '25d', 'x'], 'about 24.8 days'],
    [['run', '--label', 'x', 'x'], '--label names a kept session'],
    [['run', '--keep', '1m', '--label', 'a\tb', 'x'], 'control characters'],
    [['run', '--keep', '1m', '--label', 'é'.repeat(129), 'x'], 'at most 256 bytes'],
  ];
  for (const [args, message] of cases) {
    const command = parseCommandLine(args, {});
    assert.is(command.kind, 'usage', args.join(' '));
    assert.match((command as { message: string }).message, message);
  }
});

test('ls and attach: defaults, options, and the operator observes unless --control', () => {
  assert.equal(parseCommandLine(['ls'], {}), { kind: 'ls', socket: DEFAULT_SOCKET, json: false, timeoutMs: undefined });
  assert.equal(parseCommandLine(['ls', '--json', '--socket=/s.sock'], {}), { kind: 'ls', socket: '/s.sock', json: true, timeoutMs: undefined });
  assert.equal(parseCommandLine(['attach', '2882303761517117'], { OPENCODE_PTY_SOCKET: '/e.sock' }), {
    kind: 'attach', socket: '/e.sock', id: 2882303761517117, role: 'observe', from: 0, raw: false, timeoutMs: undefined,
  });
  const control = parseCommandLine(['attach', '--control', '--from', 'now', '--timeout', '5', '42'], {});
  assert.equal(control, { kind: 'attach', socket: DEFAULT_SOCKET, id: 42, role: 'control', from: 'now', raw: false, timeoutMs: 5000 });
  const raw = parseCommandLine(['attach', '--raw', '7'], {});
  assert.equal(raw.kind === 'attach' && raw.raw, true);
  assert.is(parseCommandLine(['ls', '--raw'], {}).kind, 'usage');
  const from = parseCommandLine(['attach', '--from=4096', '--observe', '7'], {});
  assert.equal(from.kind === 'attach' && [from.from, from.role], [4096, 'observe']);
  assert.equal(parseCommandLine(['attach', '--help'], {}), { kind: 'help' });
});

test('ls and attach usage errors', () => {
  const cases: [string[], string][] = [
    [['ls', 'extra'], 'ls takes no arguments'],
    [['ls', '--control'], 'unknown option --control'],
    [['attach'], 'attach needs a session ID'],
    [['attach', '1', '2'], 'attach takes one session ID'],
    [['attach', '0'], 'a session ID is a decimal number'],
    [['attach', '0x1f'], 'a session ID is a decimal number'],
    [['attach', '9007199254740992'], 'a session ID is a decimal number'],
    [['attach', '--observe', '--control', '1'], 'exclude each other'],
    [['attach', '--from', '-1', '1'], '--from needs an output offset'],
    [['attach', '--from'], '--from needs a value'],
    [['attach', '--json', '1'], 'unknown option --json'],
    [['attach', '--control=yes', '1'], 'unknown option --control=yes'],
  ];
  for (const [args, message] of cases) {
    const command = parseCommandLine(args, {});
    assert.is(command.kind, 'usage', args.join(' '));
    assert.match((command as { message: string }).message, message);
  }
});

test('the detach key: C-b d detaches, C-b C-b is one C-b, C-b and another key pass through, across reads', () => {
  const keys = new DetachKeyFilter();
  assert.equal(keys.feed(Buffer.from('ls\r')), { forward: Buffer.from('ls\r'), detach: false });
  assert.equal(keys.feed(Buffer.from('a\x02\x02b')), { forward: Buffer.from('a\x02b'), detach: false });
  assert.equal(keys.feed(Buffer.from('\x02x')), { forward: Buffer.from('\x02x'), detach: false });
  assert.equal(keys.feed(Buffer.from('q\x02')), { forward: Buffer.from('q'), detach: false }, 'the prefix waits for its key');
  assert.equal(keys.feed(Buffer.from('d and more')), { forward: Buffer.alloc(0), detach: true });
  assert.equal(new DetachKeyFilter().feed(Buffer.from('echo\x02dx')), { forward: Buffer.from('echo'), detach: true });
  assert.equal(new DetachKeyFilter().feed(Buffer.from('d')), { forward: Buffer.from('d'), detach: false }, 'd alone is a d');
});

const SESSION: KeptSession = {
  id: 2882303761517117, state: 'detached', controllers: 0, observers: 0, rows: 24, cols: 80, programPid: 4243, mainPid: 4242,
  startedAtMs: 1_000_000, keepMs: 600_000, deadlineMs: 1_552_000, oldest: 0, next: 3 * 1024 * 1024 / 2, fresh: true, end: null, origin: 'main-pid',
  label: 'dev server', program: 'npm', cwd: '/srv',
};

test("ls's table: one line a session, every column, control characters in a program shown as ?", () => {
  const table = formatSessionTable([
    SESSION,
    { ...SESSION, id: 7, state: 'attached', controllers: 1, observers: 2, deadlineMs: null, label: '', program: 'vi\x1b[2J', next: 100, fresh: false, origin: 'unit-process' },
    { ...SESSION, id: 8, state: 'ended', end: { code: 1, status: 3 }, deadlineMs: 1_000_000 + 3 * 3_600_000, origin: 'unknown' },
  ], 1_000_000);
  const lines = table.trimEnd().split('\n');
  assert.equal(lines[0]!.split(/\s+/), ['ID', 'STATE', 'ORIGIN', 'LABEL', 'PROGRAM', 'PID', 'RETAINED', 'ATTACHED', 'DEADLINE']);
  assert.match(lines[1]!, /^2882303761517117 +detached +main +dev server +npm +4243 +1\.5MiB +0\+0 +in 9m12s$/);
  assert.match(lines[2]!, /^7 +attached\* +unit +- +vi\?\[2J +4243 +100B +1\+2 +attached$/);
  assert.match(lines[3]!, /ended \(exit 3\) +\? .*in 3h00m$/);
  assert.is(formatSessionTable([], 0), 'no kept sessions\n');
  assert.equal([bytesText(0), bytesText(1023), bytesText(1024), bytesText(64 * 1024 * 1024)], ['0B', '1023B', '1.0KiB', '64MiB']);
  assert.equal([deadlineText(-1), deadlineText(1), deadlineText(59_000), deadlineText(3 * 86_400_000)], ['passed', 'in 1s', 'in 59s', 'in 3d00h']);
});

test.run();
