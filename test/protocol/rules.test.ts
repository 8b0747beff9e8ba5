// The value rules shared by encoder and decoder, at and just past each boundary.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, Limits } from '../../src/protocol/constants.ts';
import * as rules from '../../src/protocol/rules.ts';
import { throwsCode } from './helpers.ts';

test('checkInteger: range, integers only', () => {
  rules.checkInteger('n', 1, 1, 3);
  rules.checkInteger('n', 3, 1, 3);
  throwsCode(() => rules.checkInteger('n', 0, 1, 3), 'BAD_VALUE');
  throwsCode(() => rules.checkInteger('n', 4, 1, 3), 'BAD_VALUE');
  throwsCode(() => rules.checkInteger('n', 1.5, 1, 3), 'BAD_VALUE');
  throwsCode(() => rules.checkInteger('n', Number.NaN, 1, 3), 'BAD_VALUE');
  throwsCode(() => rules.checkInteger('n', '2' as never, 1, 3), 'BAD_VALUE');
});

test('checkCount: TOO_MANY above the limit, BAD_VALUE below the minimum, BAD_START on the wire', () => {
  rules.checkCount('argv', Limits.MAX_ARGC, 1, Limits.MAX_ARGC);
  throwsCode(() => rules.checkCount('argv', Limits.MAX_ARGC + 1, 1, Limits.MAX_ARGC), 'TOO_MANY', ErrorCode.BAD_START);
  throwsCode(() => rules.checkCount('argv', 0, 1, Limits.MAX_ARGC), 'BAD_VALUE', ErrorCode.BAD_START);
});

test('strings: size, NUL, argv[0], environment names, duplicates', () => {
  rules.checkStringSize('s', Limits.MAX_STRING);
  throwsCode(() => rules.checkStringSize('s', Limits.MAX_STRING + 1), 'OVERSIZE', ErrorCode.BAD_START);
  throwsCode(() => rules.checkNoNul('s', 'a\0'), 'BAD_VALUE');
  rules.checkArgument(1, '');
  throwsCode(() => rules.checkArgument(0, ''), 'BAD_VALUE', ErrorCode.BAD_START);
  rules.checkEnvName('PATH');
  for (const bad of ['', '=', 'A=B', 'A\0']) throwsCode(() => rules.checkEnvName(bad), 'BAD_VALUE', ErrorCode.BAD_START);
  rules.checkEnvUnique(['A', 'B', 'a']);
  throwsCode(() => rules.checkEnvUnique(['A', 'B', 'A']), 'BAD_VALUE');
});

test('tokens: printable ASCII without space, 1..max', () => {
  rules.checkToken('t', 'run-u1.service', 255);
  rules.checkToken('t', '!~', 2);
  for (const bad of ['', 'a b', 'a\tb', 'ü', 'a\x7f']) throwsCode(() => rules.checkToken('t', bad, 255), 'BAD_VALUE');
  throwsCode(() => rules.checkToken('t', 'abc', 2), 'OVERSIZE');
});

test('checkExit: codes 0..3, status a signed 32-bit integer', () => {
  for (const code of rules.EXIT_CODES) rules.checkExit(code, 0);
  rules.checkExit(1, -(2 ** 31));
  rules.checkExit(1, 2 ** 31 - 1);
  throwsCode(() => rules.checkExit(4, 0), 'BAD_VALUE');
  throwsCode(() => rules.checkExit(1, 2 ** 31), 'BAD_VALUE');
});

test('checkU64 and checkVersionRange', () => {
  assert.not.throws(() => rules.checkU64('dev', 0n));
  assert.not.throws(() => rules.checkU64('dev', (1n << 64n) - 1n));
  throwsCode(() => rules.checkU64('dev', 1n << 64n), 'BAD_VALUE');
  throwsCode(() => rules.checkU64('dev', 5 as never), 'BAD_VALUE');
  assert.not.throws(() => rules.checkVersionRange(1, 1));
  throwsCode(() => rules.checkVersionRange(2, 1), 'BAD_VALUE');
});

test.run();
