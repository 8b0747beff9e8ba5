import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeEnv } from '../../src/control/helper-channel.ts';
import { ErrorCode, SessionError } from '../../src/protocol/index.ts';
import { DENIED, environmentPolicy, programEnvironment, sessionEnvironment, type EnvironmentPolicy } from '../../src/worker/environment.ts';

test('only allowlisted names pass, TERM comes from the config', () => {
  const env = sessionEnvironment(
    [
      { name: 'LANG', value: 'C.UTF-8' },
      { name: 'LD_PRELOAD', value: '/tmp/x.so' },
      { name: 'PATH', value: '/evil' },
    ],
    ['LANG'],
    'xterm-256color',
  );
  assert.equal(env, { LANG: 'C.UTF-8', TERM: 'xterm-256color' });
});

test('a plain TERM from the client wins, a strange one does not', () => {
  assert.is(sessionEnvironment([{ name: 'TERM', value: 'screen-256color' }], [], 'xterm').TERM, 'screen-256color');
  assert.is(sessionEnvironment([{ name: 'TERM', value: '../../x y' }], [], 'xterm').TERM, 'xterm');
});

const PASS: EnvironmentPolicy = { mode: 'pass', allowlist: [], deny: [] };
const entries = (env: Record<string, string>) => Object.entries(env).map(([name, value]) => ({ name, value }));

test("policy 'pass': an agent's environment reaches the program, loader variables too, less systemd's, each dropped name told", () => {
  const { environment, dropped } = programEnvironment(
    entries({
      PATH: '/home/agent/.bun/bin:/usr/bin',
      OPENCODE_TERMINAL: '1',
      HOME: '/home/agent',
      LISTEN_FDS: '3',
      LISTEN_PID: '77',
      NOTIFY_SOCKET: '/run/systemd/notify',
      INVOCATION_ID: 'abc',
      SYSTEMD_EXEC_PID: '9',
      LD_LIBRARY_PATH: '/home/agent/lib',
      TERM: 'xterm-256color',
    }),
    PASS,
    'xterm',
  );
  assert.equal(Object.fromEntries(environment), { PATH: '/home/agent/.bun/bin:/usr/bin', OPENCODE_TERMINAL: '1', HOME: '/home/agent', LD_LIBRARY_PATH: '/home/agent/lib', TERM: 'xterm-256color' });
  assert.equal(dropped, ['LISTEN_FDS', 'LISTEN_PID', 'NOTIFY_SOCKET', 'INVOCATION_ID', 'SYSTEMD_EXEC_PID']);
});

test("policy 'allowlist': only its names, and the denylist still applies; the operator's own denials too", () => {
  const requested = entries({ LANG: 'C.UTF-8', PATH: '/x', NOTIFY_SOCKET: '/s', SECRET_TOKEN: 't' });
  const allow = programEnvironment(requested, { mode: 'allowlist', allowlist: ['LANG', 'NOTIFY_SOCKET'], deny: [] }, 'xterm');
  assert.equal(Object.fromEntries(allow.environment), { LANG: 'C.UTF-8', TERM: 'xterm' });
  assert.equal(allow.dropped, ['PATH', 'NOTIFY_SOCKET', 'SECRET_TOKEN']);
  const deny = programEnvironment(requested, { mode: 'pass', allowlist: [], deny: ['SECRET_*', 'PATH'] }, 'xterm');
  assert.equal([...deny.environment.keys()].sort(), ['LANG', 'TERM']);
  assert.equal(deny.dropped, ['PATH', 'NOTIFY_SOCKET', 'SECRET_TOKEN']);
});

test('names outside the shell alphabet are dropped and told, not sent', () => {
  const { environment, dropped } = programEnvironment(entries({ 'BASH_FUNC_f%%': '() { :; }', '1X': 'a', 'a.b': 'c', OK_1: 'v' }), PASS, 'xterm');
  assert.equal(Object.fromEntries(environment), { OK_1: 'v', TERM: 'xterm' });
  assert.equal(dropped, ['BASH_FUNC_f%%', '1X', 'a.b']);
});

test('the hardened profile applies the allowlist whatever the policy says', () => {
  const session = { environmentPolicy: 'pass' as const, environmentAllowlist: ['LANG'], environmentDeny: ['X'] };
  assert.equal(environmentPolicy(session, 'default'), { mode: 'pass', allowlist: ['LANG'], deny: ['X'] });
  assert.is(environmentPolicy(session, 'hardened').mode, 'allowlist');
});

test("a strange TERM is dropped (and said so); the built-in denylist names systemd's variables, not the loader's", () => {
  const { environment, dropped } = programEnvironment(entries({ TERM: 'a b' }), PASS, 'xterm');
  assert.equal([environment.get('TERM'), dropped], ['xterm', ['TERM']]);
  for (const name of ['LISTEN_*', 'NOTIFY_SOCKET', 'SYSTEMD_*', 'INVOCATION_ID']) assert.ok(DENIED.includes(name), name);
  assert.not.ok(DENIED.includes('LD_*'), 'the helper never gets the program environment, so the loader variables may pass');
});

test('names that are properties of every object (__proto__, constructor) are ordinary names, passed to the ENV message', () => {
  const { environment, dropped } = programEnvironment(entries({ constructor: 'c', toString: 't' }).concat({ name: '__proto__', value: 'p' }), PASS, 'xterm');
  assert.equal(dropped, []);
  assert.equal([...environment], [['constructor', 'c'], ['toString', 't'], ['__proto__', 'p'], ['TERM', 'xterm']]);
  assert.equal(encodeEnv(environment).subarray(5).toString().split('\0'), ['constructor=c', 'toString=t', '__proto__=p', 'TERM=xterm', '']);
  assert.is(sessionEnvironment([{ name: '__proto__', value: 'p' }], ['__proto__'], 'xterm')['__proto__'], 'p');
});

test('a name twice is refused with BAD_START, whether the program would get it or not (never a doubled dropped name)', () => {
  for (const name of ['PATH', 'NOTIFY_SOCKET', 'TERM', '1X']) {
    const twice = [{ name, value: 'a' }, { name: 'OTHER', value: 'b' }, { name, value: 'c' }];
    assert.throws(
      () => programEnvironment(twice, PASS, 'xterm'),
      (error: unknown) => error instanceof SessionError && error.wireCode === ErrorCode.BAD_START && /appears twice/.test(error.message),
      name,
    );
  }
});

test.run();
