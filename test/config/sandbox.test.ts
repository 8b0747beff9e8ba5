// session.minProfile, session.profiles, the network ceiling and default, each budget's ceiling and default:
// the resolved settings, and every bad one refused by its field.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAccounts } from '../../src/config/accounts.ts';
import { ConfigError, validateConfig } from '../../src/config/schema.ts';
import { DEFAULT_SANDBOX } from '../../src/config/sandbox.ts';

const accounts = parseAccounts('root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/sh\n', 'root:x:0:\nagent:x:1500:\nopencode-pty:x:1800:\n');
const allowAll = () => undefined;
const withSession = (session: Record<string, unknown>) => ({ client: { user: 'agent', service: 'agent.service' }, session });
const resolve = (session: Record<string, unknown>) => validateConfig(withSession(session), accounts, allowAll).session;

function rejects(session: Record<string, unknown>, field: string): void {
  try {
    resolve(session);
  } catch (error) {
    assert.instance(error, ConfigError);
    assert.is((error as ConfigError).field, field, (error as Error).message);
    return;
  }
  assert.unreachable(`expected ${field} to be refused`);
}

test('by default: the default profile as the floor, every profile offered, network on, no budget (today\'s sessions)', () => {
  const session = resolve({});
  assert.is(session.minProfile, 'default');
  assert.equal(session.profiles, DEFAULT_SANDBOX.profiles);
  assert.is(session.maxNetwork, 'on');
  assert.is(session.defaultNetwork, 'on');
  assert.equal(session.budgets, DEFAULT_SANDBOX.budgets);
});

test('the floor: minProfile, or profile (its older name); the profiles offered start at the floor', () => {
  assert.is(resolve({ minProfile: 'hardened' }).minProfile, 'hardened');
  assert.is(resolve({ profile: 'hardened' }).minProfile, 'hardened');
  assert.not.ok(resolve({ minProfile: 'hardened' }).profiles.includes('default'));
  assert.equal(resolve({ minProfile: 'hardened', profiles: [] }).profiles, ['hardened'], 'the floor is always allowed');
  rejects({ minProfile: 'hardened', profile: 'default' }, 'session.profile');
  rejects({ minProfile: 'paranoid' }, 'session.minProfile');
  rejects({ profile: 'paranoid' }, 'session.profile');
  rejects({ minProfile: 'hardened', profiles: ['default'] }, 'session.profiles');
  rejects({ profiles: ['nope'] }, 'session.profiles[0]');
  rejects({ profiles: 'hardened' }, 'session.profiles');
});

test('network: the default follows the ceiling, never above it', () => {
  assert.is(resolve({ maxNetwork: 'off' }).defaultNetwork, 'off');
  assert.is(resolve({ maxNetwork: 'on', defaultNetwork: 'host-loopback' }).defaultNetwork, 'host-loopback');
  rejects({ maxNetwork: 'off', defaultNetwork: 'on' }, 'session.defaultNetwork');
  rejects({ maxNetwork: 'loopback' }, 'session.maxNetwork');
});

test('budgets: a ceiling without a default is the default (no START escapes it); 0, negative, fractional, past 2^53 or a default past the ceiling refused', () => {
  assert.equal(resolve({ budgets: { memoryBytes: { max: 1 << 30 } } }).budgets.memoryBytes, { max: 1 << 30, default: 1 << 30 });
  assert.equal(resolve({ budgets: { tasks: { default: 64 } } }).budgets.tasks, { max: null, default: 64 });
  for (const bad of [0, -1, 1.5, 2 ** 53, 2 ** 64]) rejects({ budgets: { timeMs: { max: bad } } }, 'session.budgets.timeMs.max');
  rejects({ budgets: { cpuPercent: { max: 100_001 } } }, 'session.budgets.cpuPercent.max');
  rejects({ budgets: { tasks: { max: 10, default: 11 } } }, 'session.budgets.tasks.default');
  rejects({ budgets: { disk: { max: 1 } } }, 'session.budgets.disk');
  rejects({ budgets: { tasks: { most: 1 } } }, 'session.budgets.tasks.most');
});

test.run();
