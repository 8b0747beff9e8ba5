import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAccounts } from '../../src/config/accounts.ts';
import { ConfigError, DEFAULT_LIMITS, validateConfig } from '../../src/config/schema.ts';

const accounts = parseAccounts(
  'root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/sh\nrootgroup:x:1600:0::/:/bin/sh\n',
  'root:x:0:\nagent:x:1500:\nother:x:1700:\nopencode-pty:x:1800:\nwithagent:x:1900:other,agent\n',
);
const allowAll = (_name: string, _value: unknown): string | undefined => undefined;
const minimal = { client: { user: 'agent', service: 'agent.service' } };

function rejects(raw: unknown, field: string, checkProperty = allowAll): void {
  try {
    validateConfig(raw, accounts, checkProperty);
  } catch (error) {
    assert.instance(error, ConfigError);
    assert.is((error as ConfigError).field, field);
    assert.is((error as ConfigError).code, 'CONFIG_INVALID');
    assert.ok((error as Error).message.startsWith(`config: ${field}: `));
    return;
  }
  assert.unreachable(`expected ${field} to be refused`);
}

test('a minimal config gets the seeds defaults and resolved ids', () => {
  const config = validateConfig(minimal, accounts, allowAll);
  assert.equal(config.client, { user: 'agent', group: 'agent', uid: 1500, gid: 1500, service: 'agent.service', home: '/home/agent' });
  assert.equal(config.limits, DEFAULT_LIMITS);
  assert.is(config.limits.maxSessions, 16);
  assert.is(config.limits.maxUnauthenticated, 32);
  assert.is(config.limits.maxAdmissionsPerMinute, 120);
  assert.is(config.limits.handshakeTimeoutMs, 5000);
  assert.is(config.limits.sessionsPerWorker, 64);
  assert.is(config.requireClientUnit, true);
  assert.is(config.socketPath, '/run/opencode-pty/supervisor.sock');
  assert.is(config.unitPrefix, 'opencode-pty-');
  assert.is(config.session.term, 'xterm-256color');
});

test('gshadow members, administrators and a usable group password count as having the socket group', () => {
  const passwd = 'agent:x:1500:1500::/home/agent:/bin/sh\n';
  const group = 'agent:x:1500:\nopencode-pty:x:1800:\n';
  const config = (gshadow: string) => () => validateConfig(minimal, parseAccounts(passwd, group, gshadow), allowAll);
  assert.is(config('opencode-pty:!::\n')().socketGid, 1800);
  assert.is(config('opencode-pty:::\n')().socketGid, 1800, 'an empty password lets members only');
  for (const gshadow of ['opencode-pty:!::agent\n', 'opencode-pty:!:agent:\n', 'opencode-pty:$6$salt$hash::\n']) {
    try {
      config(gshadow)();
      assert.unreachable(gshadow);
    } catch (error) {
      assert.is((error as ConfigError).field, 'socketGroup', gshadow);
    }
  }
});

test('the socket group is one the client account does not have, so sessions cannot connect', () => {
  const config = validateConfig(minimal, accounts, allowAll);
  assert.is(config.socketGroup, 'opencode-pty');
  assert.is(config.socketGid, 1800);
  // Its own primary group, or a group listing it as a member, would let every session program in.
  rejects({ ...minimal, socketGroup: 'agent' }, 'socketGroup');
  rejects({ ...minimal, socketGroup: 'withagent' }, 'socketGroup');
  assert.match(messageOf({ ...minimal, socketGroup: 'withagent' }), 'the client account agent has group withagent');
  // Without a required client unit any process of the account may connect anyway (documented).
  assert.is(validateConfig({ client: { user: 'agent' }, requireClientUnit: false, socketGroup: 'agent' }, accounts, allowAll).socketGid, 1500);
});

function messageOf(raw: unknown): string {
  try {
    validateConfig(raw, accounts, allowAll);
  } catch (error) {
    return (error as Error).message;
  }
  return '';
}

test('every field is checked and named', () => {
  rejects([], '(top level)');
  rejects({ ...minimal, extra: 1 }, 'extra');
  rejects({}, 'client.user');
  rejects({ client: { user: 'nobody-here', service: 'a.service' } }, 'client.user');
  rejects({ client: { user: 'root', service: 'a.service' } }, 'client.user');
  rejects({ client: { user: 'rootgroup', group: 'root', service: 'a.service' } }, 'client.group');
  rejects({ client: { user: 'agent', group: 'missing', service: 'a.service' } }, 'client.group');
  rejects({ client: { user: 'agent' } }, 'client.service');
  rejects({ client: { user: 'agent', service: 'not a unit' } }, 'client.service');
  rejects({ client: { user: 'agent', service: 'a.service', shell: 1 } }, 'client.shell');
  rejects({ ...minimal, requireClientUnit: 'no' }, 'requireClientUnit');
  rejects({ ...minimal, socketPath: 'relative' }, 'socketPath');
  rejects({ ...minimal, unitPrefix: 'Bad Prefix' }, 'unitPrefix');
  rejects({ ...minimal, socketGroup: 'missing' }, 'socketGroup');
  rejects({ ...minimal, socketGroup: 'root' }, 'socketGroup');
  rejects({ ...minimal, helperPath: 'x' }, 'helperPath');
  for (const key of Object.keys(DEFAULT_LIMITS)) {
    rejects({ ...minimal, limits: { [key]: -1 } }, `limits.${key}`);
    rejects({ ...minimal, limits: { [key]: 1.5 } }, `limits.${key}`);
  }
  rejects({ ...minimal, limits: { sessions: 3 } }, 'limits.sessions');
  rejects({ ...minimal, session: { term: 'a b' } }, 'session.term');
  rejects({ ...minimal, session: { environmentAllowlist: 'LANG' } }, 'session.environmentAllowlist');
  rejects({ ...minimal, session: { environmentAllowlist: ['OK', 'NOT-OK'] } }, 'session.environmentAllowlist[1]');
  rejects({ ...minimal, session: { environmentPolicy: 'all' } }, 'session.environmentPolicy');
  rejects({ ...minimal, session: { environmentDeny: ['A*B'] } }, 'session.environmentDeny[0]');
  rejects({ ...minimal, session: { stopTimeoutSec: 0 } }, 'session.stopTimeoutSec');
  rejects({ ...minimal, session: { slice: 'x.service' } }, 'session.slice');
  rejects({ ...minimal, session: { profile: 'paranoid' } }, 'session.profile');
  rejects({ ...minimal, session: { minProfile: 'paranoid' } }, 'session.minProfile');
  rejects({ ...minimal, session: { workspaceRead: '/srv' } }, 'session.workspaceRead');
  rejects({ ...minimal, session: { workspaceRead: ['srv'] } }, 'session.workspaceRead[0]');
  rejects({ ...minimal, session: { workspaceWrite: ['/srv/a\nb'] } }, 'session.workspaceWrite[0]');
  rejects({ ...minimal, session: { workspaceWrite: ['/srv/../home'] } }, 'session.workspaceWrite[0]');
  rejects({ ...minimal, session: { workspaceWrite: Array(33).fill('/srv') } }, 'session.workspaceWrite');
  // Write paths become ReadWritePaths= too: what a unit file cannot carry is refused at load.
  for (const path of ['/srv/a b', '/srv/a:b', '/srv/"a"']) rejects({ ...minimal, session: { workspaceWrite: [path] } }, 'session.workspaceWrite[0]');
  rejects({ ...minimal, session: { properties: [] } }, 'session.properties');
  rejects({ ...minimal, session: { properties: { User: 'root' } } }, 'session.properties.User', (name) =>
    name === 'User' ? 'not an allowed property' : undefined,
  );
});

test('the workspace profile and its operator paths; the client account\'s home comes from passwd', () => {
  const config = validateConfig({ ...minimal, session: { minProfile: 'workspace', workspaceRead: ['/nix/store'], workspaceWrite: ['/srv/cache'] } }, accounts, allowAll);
  assert.is(config.session.minProfile, 'workspace');
  assert.equal([config.session.workspaceRead, config.session.workspaceWrite], [['/nix/store'], ['/srv/cache']]);
  assert.equal(validateConfig(minimal, accounts, allowAll).session.workspaceRead, []);
  const withHome = parseAccounts('agent:x:990:990::/home/agent:/bin/sh\nnohome:x:991:991:::/bin/sh\n', 'agent:x:990:\nnohome:x:991:\n');
  assert.equal(withHome.user('agent'), { uid: 990, gid: 990, home: '/home/agent' });
  assert.equal(withHome.user('nohome'), { uid: 991, gid: 991 });
});

test("the environment policy: 'pass' by default, an allowlist and extra denials as the operator's options", () => {
  assert.is(validateConfig(minimal, accounts, allowAll).session.environmentPolicy, 'pass');
  const strict = validateConfig({ ...minimal, session: { environmentPolicy: 'allowlist', environmentAllowlist: ['LANG'], environmentDeny: ['AWS_*', 'SECRET'] } }, accounts, allowAll);
  assert.equal([strict.session.environmentPolicy, strict.session.environmentAllowlist, strict.session.environmentDeny], ['allowlist', ['LANG'], ['AWS_*', 'SECRET']]);
});

test('without a required client unit the service may be left out', () => {
  const config = validateConfig({ client: { user: 'agent' }, requireClientUnit: false }, accounts, allowAll);
  assert.is(config.client.service, null);
  assert.is(config.requireClientUnit, false);
});

test('passwd parsing keeps the first record and skips malformed lines', () => {
  const lookup = parseAccounts('a:x:10:20::/:/bin/sh\na:x:11:21::/:/bin/sh\nbroken\nb:x:q:1::/:/bin/sh\n', 'g:x:5:\n');
  assert.equal(lookup.user('a'), { uid: 10, gid: 20, home: '/' });
  assert.is(lookup.user('b'), undefined);
  assert.is(lookup.group('g'), 5);
  assert.is(lookup.group('a'), undefined);
});

test.run();

test('kept sessions: the defaults (a day, 2 MiB, 8 kept, 4 observers) and their bounds', () => {
  const config = validateConfig(minimal, accounts, allowAll);
  assert.equal([config.session.maxKeepMs, config.session.maxRetainedBytes, config.session.defaultRetainedBytes], [86_400_000, 2 * 1024 * 1024, 2 * 1024 * 1024]);
  assert.equal([config.limits.maxKept, config.limits.maxObservers], [8, 4]);
  // A smaller maxSessions lowers the default maxKept with it (a kept session holds its slot).
  assert.is(validateConfig({ ...minimal, limits: { maxSessions: 3 } }, accounts, allowAll).limits.maxKept, 3);
  rejects({ ...minimal, limits: { maxSessions: 3, maxKept: 4 } }, 'limits.maxKept');
  assert.is(validateConfig({ ...minimal, limits: { maxSessions: 3, maxKept: 0 } }, accounts, allowAll).limits.maxKept, 0);
  rejects({ ...minimal, limits: { maxObservers: 17 } }, 'limits.maxObservers');
  rejects({ ...minimal, session: { maxKeepMs: -1 } }, 'session.maxKeepMs');
  rejects({ ...minimal, session: { maxKeepMs: 2 ** 32 } }, 'session.maxKeepMs');
  // Root's keep deadline is a timer: setTimeout's bound (2^31-1 ms, 24.8 days) is the most.
  rejects({ ...minimal, session: { maxKeepMs: 2 ** 31 } }, 'session.maxKeepMs');
  assert.is(validateConfig({ ...minimal, session: { maxKeepMs: 2 ** 31 - 1 } }, accounts, allowAll).session.maxKeepMs, 2 ** 31 - 1);
  rejects({ ...minimal, session: { maxRetainedBytes: 64 * 1024 * 1024 + 1 } }, 'session.maxRetainedBytes');
  rejects({ ...minimal, session: { maxRetainedBytes: 4095 } }, 'session.maxRetainedBytes');
  // The default ring lies within the largest: beyond it is refused, and a smaller largest lowers the default.
  rejects({ ...minimal, session: { maxRetainedBytes: 8192, defaultRetainedBytes: 8193 } }, 'session.defaultRetainedBytes');
  const small = validateConfig({ ...minimal, session: { maxRetainedBytes: 8192 } }, accounts, allowAll);
  assert.is(small.session.defaultRetainedBytes, 8192);
  const large = validateConfig({ ...minimal, session: { maxRetainedBytes: 64 * 1024 * 1024, defaultRetainedBytes: 4096 } }, accounts, allowAll);
  assert.equal([large.session.maxRetainedBytes, large.session.defaultRetainedBytes], [64 * 1024 * 1024, 4096]);
});
