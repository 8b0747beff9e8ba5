// The CLI's command line parser: defaults, every option form, and each usage error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SOCKET, USAGE, parseCommandLine } from '../../src/cli/run-args.ts';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';

test('run with defaults takes TERM only from the environment', () => {
  assert.equal(parseCommandLine(['run', '--', 'bash', '-l'], { TERM: 'xterm', HOME: '/root' }), {
    kind: 'run',
    socket: DEFAULT_SOCKET,
    cwd: undefined,
    env: { TERM: 'xterm' },
    argv: ['bash', '-l'],
    timeoutMs: undefined,
    rows: undefined,
    cols: undefined,
    resizeFd: undefined,
  });
});

test('options in both spellings; --env repeats and overrides TERM; the environment names the socket', () => {
  const command = parseCommandLine(
    ['run', '--cwd=/srv', '--env', 'A=1', '--env=TERM=dumb', '--env', 'B=x=y', 'ls', '--all'],
    { TERM: 'xterm', OPENCODE_PTY_SOCKET: '/tmp/s.sock' },
  );
  assert.equal(command, {
    kind: 'run',
    socket: '/tmp/s.sock',
    cwd: '/srv',
    env: { TERM: 'dumb', A: '1', B: 'x=y' },
    argv: ['ls', '--all'],
    timeoutMs: undefined,
    rows: undefined,
    cols: undefined,
    resizeFd: undefined,
  });
  const explicit = parseCommandLine(['run', '--socket', '/a.sock', 'x'], { OPENCODE_PTY_SOCKET: '/tmp/s.sock' });
  assert.is(explicit.kind === 'run' && explicit.socket, '/a.sock', '--socket wins over the environment');
});

test('help in every form', () => {
  for (const args of [['--help'], ['-h'], ['help'], ['run', '--help']]) {
    assert.equal(parseCommandLine(args, {}), { kind: 'help' }, args.join(' '));
  }
});

test('usage errors', () => {
  const cases: [string[], string][] = [
    [[], 'missing command'],
    [['walk'], 'unknown command'],
    [['run', '--bogus', 'x'], 'unknown option --bogus'],
    [['run', '-x'], 'unknown option -x'],
    [['run', '--socket'], '--socket needs a value'],
    [['run', '--env', 'NOVALUE', 'x'], '--env needs NAME=VALUE'],
    [['run', '--env', '=v', 'x'], '--env needs NAME=VALUE'],
    [['run', '--cwd', '/'], 'missing COMMAND'],
    [['run', '--'], 'missing COMMAND'],
  ];
  for (const [args, message] of cases) {
    const command = parseCommandLine(args, {});
    assert.is(command.kind, 'usage', args.join(' '));
    assert.match((command as { message: string }).message, message);
  }
});

test('after -- everything is the command, even option-like words', () => {
  const command = parseCommandLine(['run', '--', '--socket', 'x'], {});
  assert.equal(command.kind === 'run' && command.argv, ['--socket', 'x']);
});

test('--timeout takes seconds; --version is a command of its own', () => {
  const command = parseCommandLine(['run', '--timeout', '2.5', 'x'], {});
  assert.is(command.kind === 'run' && command.timeoutMs, 2500);
  assert.is(parseCommandLine(['run', '--timeout=0', 'x'], {}).kind, 'run');
  for (const bad of ['-1', 'soon', '', '1e9', '90000']) {
    const refused = parseCommandLine(['run', '--timeout', bad, 'x'], {});
    assert.is(refused.kind, 'usage', `--timeout ${JSON.stringify(bad)}`);
  }
  assert.equal(parseCommandLine(['--version'], {}), { kind: 'version' });
});

test('--rows and --cols set the size at start, each from 1 to 65535; --resize-fd takes an fd of 3 or above', () => {
  const command = parseCommandLine(['run', '--rows', '40', '--cols=120', '--resize-fd', '3', 'x'], {});
  assert.ok(command.kind === 'run');
  assert.equal([command.rows, command.cols, command.resizeFd], [40, 120, 3]);
  const onlyCols = parseCommandLine(['run', '--cols', '65535', 'x'], {});
  assert.equal(onlyCols.kind === 'run' && [onlyCols.rows, onlyCols.cols], [undefined, 65535]);
  for (const [name, bad] of [
    ['--rows', '0'],
    ['--rows', '65536'],
    ['--cols', '-1'],
    ['--cols', '80x'],
    ['--rows', ''],
    ['--rows', '1.5'],
    ['--resize-fd', '0'],
    ['--resize-fd', '2'],
    ['--resize-fd', 'three'],
    ['--resize-fd', '99999999999'],
  ] as const) {
    const refused = parseCommandLine(['run', name, bad, 'x'], {});
    assert.is(refused.kind, 'usage', `${name} ${JSON.stringify(bad)}`);
    assert.match((refused as { message: string }).message, name);
  }
});

test('--help on the environment says what the supervisor does: its policy, by default pass with a denylist', () => {
  const help = USAGE.replace(/\s+/g, ' ');
  assert.is(DEFAULT_SESSION.environmentPolicy, 'pass');
  assert.match(help, 'session.environmentPolicy');
  assert.match(help, `by default (${DEFAULT_SESSION.environmentPolicy}) every variable given here but the ones systemd sets for a unit`);
  assert.not.match(help, 'applies its own allowlist');
});

test.run();
