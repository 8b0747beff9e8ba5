// The operator commands' command lines: --help, usage errors and their exit statuses (no host touched).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATOR_COMMANDS } from '../../src/cli/operate.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import type { CommandContext } from '../../src/cli/context.ts';
import { commandOptions, parseOptions, prefixLayout } from '../../src/cli/options.ts';
import { DEFAULT_LAYOUT } from '../../src/operate/layout.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

function run(command: string, args: string[]): { code: number; stdout: string; stderr: string; ran: string[][] } {
  let stdout = '';
  let stderr = '';
  const ran: string[][] = [];
  const context: CommandContext = {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    run: (file, argv) => {
      ran.push([file, ...argv]);
      return { code: 0, stdout: '', stderr: '' };
    },
    bundleDir: '/nonexistent',
  };
  const code = OPERATOR_COMMANDS[command]!(args, context);
  return { code, stdout, stderr, ran };
}

test('every operator command has --help on stdout with its exit statuses, running nothing', () => {
  for (const name of Object.keys(OPERATOR_COMMANDS)) {
    const result = run(name, ['--help']);
    assert.is(result.code, EXIT.OK, name);
    assert.match(result.stdout, new RegExp(`^Usage: opencode-ptyctl ${name}`));
    assert.match(result.stdout, /Exit status: 0 done/);
    assert.equal(result.ran, [], `${name} --help runs nothing`);
  }
});

test('usage errors exit 2 with the reason and the usage on stderr', () => {
  const cases: [string, string[], RegExp][] = [
    ['install', [], /--client-user is required/],
    ['install', ['--client-user'], /--client-user needs a value/],
    ['install', ['--client-user', 'a', '--bogus'], /unknown option --bogus/],
    ['install', ['--client-user', 'a', '--prefix', 'rel'], /--prefix must be an absolute path/],
    ['uninstall', ['extra'], /unexpected argument extra/],
    ['stop', [], /name a session UNIT or --all/],
    ['stop', ['--all', 'x.service'], /not both/],
    ['status', ['--json=1'], /--json takes no value/],
    ['verify', ['--nope'], /unknown option --nope/],
  ];
  for (const [name, args, message] of cases) {
    const result = run(name, args);
    assert.is(result.code, EXIT.USAGE, `${name} ${args.join(' ')}`);
    assert.match(result.stderr, message);
  }
});

test('install from a directory without a built bundle fails and says how to build one', () => {
  const result = run('install', ['--client-user', 'opencode']);
  assert.is(result.code, EXIT.FAILED);
  assert.match(result.stderr, /no built bundle at \/nonexistent .*run node build\.mjs/);
});

test('install with no --client-user upgrades the recorded install (account, unit, group from its record); with no record it is a usage error', () => {
  const prefix = mkdtempSync(join(tmpdir(), 'opencode-pty-upgrade-'));
  try {
    writeFileSync(join(prefix, 'installed.json'), JSON.stringify({ format: 1, current: 'x', versions: ['x'], files: {}, dirs: [], createdGroup: null, clientUnit: 'recorded-agent.service', clientUser: 'no-such-account-x', socketGroup: 'opencode-pty', nodePath: process.execPath, unitPrefix: 'opencode-pty-' }));
    let stderr = '';
    const context: CommandContext = { stdout: () => undefined, stderr: (t) => (stderr += t), run: () => ({ code: 0, stdout: '', stderr: '' }), bundleDir: fileURLToPath(new URL('../../dist', import.meta.url)) };
    const code = OPERATOR_COMMANDS.install!(['--prefix', prefix, '--dry-run'], context);
    assert.is(code, EXIT.REFUSED, stderr);
    assert.match(stderr, 'no such account "no-such-account-x" (--client-user)', 'the recorded account, not a usage error');
    assert.not.match(stderr, '--client-user is required');
    const none = run('install', ['--prefix', join(prefix, 'elsewhere')]);
    assert.is(none.code, EXIT.USAGE);
    assert.match(none.stderr, `--client-user is required (no earlier install at ${join(prefix, 'elsewhere')} to take it from)`);
  } finally {
    rmSync(prefix, { recursive: true, force: true });
  }
});

test('options: inline values, flags, and -- ending options', () => {
  assert.equal(parseOptions(['--a=1', '--f', '--', '--b'], { values: ['a'], flags: ['f'] }), { values: { a: '1' }, flags: new Set(['f']), positionals: ['--b'] });
});

test('commandOptions: the options, or the exit status after --help or a usage error; --prefix names the layout', () => {
  let out = '';
  const context: CommandContext = { stdout: (t) => (out += t), stderr: (t) => (out += t), run: () => ({ code: 0, stdout: '', stderr: '' }), bundleDir: '/nonexistent' };
  const spec = { values: ['prefix'], flags: ['json'] };
  assert.equal(commandOptions('x', 'USAGE', ['--json'], spec, context), { values: {}, flags: new Set(['json']), positionals: [] });
  assert.is(commandOptions('x', 'USAGE', ['-h'], spec, context), EXIT.OK);
  assert.is(commandOptions('x', 'USAGE', ['stray'], spec, context), EXIT.USAGE);
  assert.is(out, 'USAGEopencode-ptyctl x: unexpected argument stray\n\nUSAGE');
  assert.is(prefixLayout('/opt/ocpty//').libDir, '/opt/ocpty');
  assert.equal(prefixLayout(undefined), DEFAULT_LAYOUT);
});

test('stop acts only on live session units: any other unit name is refused and nothing is stopped', () => {
  const ran: string[][] = [];
  let stderr = '';
  const context: CommandContext = {
    stdout: () => undefined,
    stderr: (text) => (stderr += text),
    run: (file, argv) => {
      ran.push([file, ...argv]);
      if (argv[0] === 'list-units') return { code: 0, stdout: 'opencode-pty-session-0a.service loaded active running x\n', stderr: '' };
      if (argv[0] === 'show') return { code: 0, stdout: 'ActiveState=active\n', stderr: '' };
      return { code: 0, stdout: '', stderr: '' };
    },
    bundleDir: '/nonexistent',
  };
  for (const unit of ['ssh.service', 'opencode-pty-supervisor@broker.service', 'opencode-pty-session-*', '--all=x']) {
    const code = OPERATOR_COMMANDS.stop!([unit], context);
    assert.ok(code !== EXIT.OK, unit);
  }
  assert.ok(!ran.some((argv) => argv[1] === 'stop'), JSON.stringify(ran));
  assert.match(stderr, /no such live session: ssh\.service/);
});

test.run();
