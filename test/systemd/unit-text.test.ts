// Unit-file text policy: what systemd would write unescaped holds no line break, control byte or
// backslash; the program label keeps only a safe alphabet.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkUnitFileText, programLabel, PROGRAM_LABEL_MAX } from '../../src/systemd/unit-text.ts';
import { sessionUnitProperties, type SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { throwsCode } from './helpers.ts';

function spec(overrides: Partial<SessionUnitSpec> = {}): SessionUnitSpec {
  return {
    description: 'opencode-pty session bash',
    helperPath: '/usr/lib/opencode-pty/opencode-pty-session',
    helperArgs: ['24', '80', '/bin/bash'],
    user: 'agent',
    group: 'agent',
    cwdFd: 3,
    stdoutFd: 4,
    environment: { TERM: 'xterm' },
    stopTimeoutSec: 5,
    ...overrides,
  };
}

test('program labels keep [A-Za-z0-9._+-] of the last component, at most 64 bytes', () => {
  assert.is(programLabel('/usr/bin/bash'), 'bash');
  assert.is(programLabel('python3.12'), 'python3.12');
  assert.is(programLabel('/x/d\n[Service]\nExecStopPost=+/usr/bin/touch /run/PWNED\nx'), 'PWNED_x');
  assert.is(programLabel('a b%c\\d\u00e9\u2028'), 'a_b_c_d__');
  assert.is(programLabel('x'.repeat(200)).length, PROGRAM_LABEL_MAX);
  assert.is(programLabel(''), 'program');
  assert.is(programLabel('/usr/bin/'), 'program');
  assert.is(programLabel('..'), 'program');
  for (const sample of ['\n', '\\', '%', ' ', '=', '[', '"', "'", '$']) assert.not.ok(programLabel(`a${sample}b`).includes(sample));
});

for (const [label, bad] of [
  ['newline', 'a\nb'],
  ['carriage return', 'a\rb'],
  ['NUL-free control byte', 'a\u0001b'],
  ['DEL', 'a\u007fb'],
  ['C1 control', 'a\u0085b'],
  ['backslash', 'a\\'],
  ['line separator', 'a\u2028b'],
] as const) {
  test(`a ${label} in any unescaped string property is refused`, () => {
    throwsCode(() => sessionUnitProperties(spec({ description: bad })), 'PROPERTY_INVALID');
    throwsCode(() => sessionUnitProperties(spec({ user: bad })), 'PROPERTY_INVALID');
    throwsCode(() => sessionUnitProperties(spec({ group: bad })), 'PROPERTY_INVALID');
    throwsCode(() => sessionUnitProperties(spec({ inaccessiblePaths: [`/run/${bad}`] })), 'PROPERTY_INVALID');
    throwsCode(() => checkUnitFileText([['Whatever', 's', bad]]), 'PROPERTY_INVALID');
    throwsCode(() => checkUnitFileText([['Whatever', 'as', ['ok', bad]]]), 'PROPERTY_INVALID');
  });
}

test('argv and environment may carry any byte but NUL: systemd escapes those itself', () => {
  const hostile = 'a\n[Service]\nExecStopPost=+/bin/true\\ %h';
  const tuples = sessionUnitProperties(spec({ helperArgs: ['24', '80', hostile], environment: { TERM: 'xterm', X: hostile } }));
  assert.ok(tuples.some(([name]) => name === 'ExecStart'));
  throwsCode(() => sessionUnitProperties(spec({ helperArgs: ['a\0b'] })), 'PROPERTY_INVALID');
});

test('strings nested in structs and arrays are checked too', () => {
  throwsCode(() => checkUnitFileText([['SystemCallFilter', '(bas)', [false, ['@debug', 'a\nb']] as never]]), 'PROPERTY_INVALID');
  checkUnitFileText([['SystemCallFilter', '(bas)', [false, ['@debug', 'ptrace']] as never]]);
  checkUnitFileText([['AddRef', 'b', true], ['TimeoutStopUSec', 't', 1n]]);
});

test('the hardened profile adds the call filter and protections; the default adds nothing; the operator cannot undo it', () => {
  const plain = sessionUnitProperties(spec());
  const hardened = sessionUnitProperties(spec({ profile: 'hardened', helperArgs: ['--cwd-path=/w', '24', '80', '/bin/bash'], limits: { NoNewPrivileges: false } }));
  assert.not.ok(plain.some(([name]) => name === 'SystemCallFilter'));
  const filter = hardened.find(([name]) => name === 'SystemCallFilter')!;
  assert.equal(filter[1], '(bas)');
  const [allow, names] = filter[2] as [boolean, string[]];
  assert.is(allow, false);
  for (const call of ['@debug', 'ptrace', 'pidfd_getfd', 'process_vm_readv', 'process_vm_writev']) assert.ok(names.includes(call), call);
  assert.equal(hardened.find(([name]) => name === 'SystemCallErrorNumber'), ['SystemCallErrorNumber', 'i', 1]);
  const nnp = hardened.filter(([name]) => name === 'NoNewPrivileges');
  assert.equal(nnp, [['NoNewPrivileges', 'b', true]], "the profile's setting is the only one of its name");
});

test.run();
