// run's --profile, --network and --max-* options: each value read strictly (0, negative, fractional, 2^64 and
// malformed values are usage errors before anything is sent), and how a budget's end is reported.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { USAGE, parseCommandLine } from '../../src/cli/run-args.ts';
import { TIMEOUT_STATUS, budgetEndLine } from '../../src/cli/sandbox-args.ts';

const run = (...args: string[]) => parseCommandLine(['run', ...args, '--', 'make'], {});

test('the issue\'s command line: --profile workspace --network off --max-time 10m --max-memory 1G --max-tasks N --max-cpu P', () => {
  const command = run('--profile', 'workspace', '--network', 'off', '--max-time', '10m', '--max-memory', '1G', '--max-tasks=64', '--max-cpu', '50%');
  assert.equal((command as { sandbox?: unknown }).sandbox, {
    profile: 'workspace',
    network: 'off',
    budgets: { timeMs: 600_000, memoryBytes: 1 << 30, tasks: 64, cpuPercent: 50 },
  });
  assert.equal((run('--max-time', '90') as { sandbox?: unknown }).sandbox, { budgets: { timeMs: 90_000 } });
  assert.equal((run('--max-memory', '512M', '--max-cpu', '200') as { sandbox?: unknown }).sandbox, { budgets: { memoryBytes: 512 << 20, cpuPercent: 200 } });
  assert.not.ok('sandbox' in run(), 'nothing given: nothing asked (any server version serves)');
});

test('every bad value is a usage error naming the option', () => {
  const bad: [string, string][] = [
    ['--max-time', '0'], ['--max-time', '-5m'], ['--max-time', '10y'], ['--max-time', '0.0001ms'],
    ['--max-memory', '0'], ['--max-memory', '-1'], ['--max-memory', '1.5G'], ['--max-memory', '18446744073709551616'], ['--max-memory', '9007199254740993'], ['--max-memory', '16384T'],
    ['--max-tasks', '0'], ['--max-tasks', '-3'], ['--max-tasks', '2.5'], ['--max-tasks', '18446744073709551616'],
    ['--max-cpu', '0'], ['--max-cpu', '50.5%'], ['--max-cpu', 'half'],
    ['--network', 'loopback'], ['--network', 'ON'], ['--profile', 'Workspace'], ['--profile', 'a b'], ['--profile', ''],
  ];
  for (const [option, value] of bad) {
    const command = run(option, value);
    assert.is(command.kind, 'usage', `${option} ${value}`);
    assert.match((command as { message: string }).message, option, `${option} ${value}`);
  }
});

test('a budget\'s end: the wall clock is timeout(1)\'s 124, said on stderr; an OOM kill is said; other results say nothing', () => {
  assert.is(TIMEOUT_STATUS, 124);
  assert.match(budgetEndLine('timeout')!, /--max-time/);
  assert.match(budgetEndLine('oom-kill')!, /--max-memory/);
  assert.is(budgetEndLine('exit-code'), undefined);
  assert.match(USAGE, '--max-memory SIZE');
  assert.match(USAGE, '124 when the session ran out of its --max-time');
});

test.run();
