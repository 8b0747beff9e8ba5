// A session's network and budgets as unit properties: each mode and budget's exact tuples, through the
// allowlist's converters; the operator's same-name settings apply only where stricter; nothing new
// reaches unit-file text unchecked.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { budgetProperties, networkProperties, stricterOf, wallClockProperties } from '../../src/systemd/session-sandbox.ts';
import { sessionUnitProperties, type PropertyTuple, type SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { limitProperties } from '../../src/systemd/unit-limits.ts';
import { throwsCode } from './helpers.ts';

const spec = (overrides: Partial<SessionUnitSpec> = {}): SessionUnitSpec => ({
  description: 'opencode-pty session',
  helperPath: '/usr/lib/opencode-pty/opencode-pty-session',
  helperArgs: ['24', '80', 'sh'],
  user: 'agent',
  group: 'agent',
  cwdFd: 17,
  stdoutFd: 18,
  environment: {},
  stopTimeoutSec: 5,
  ...overrides,
});

const named = (tuples: PropertyTuple[], name: string) => tuples.filter(([n]) => n === name);

test('network: on adds nothing; off is PrivateNetwork=yes; host-loopback denies any, allows localhost and counts (IPAccounting)', () => {
  assert.equal(networkProperties('on'), []);
  assert.equal(networkProperties(undefined), []);
  assert.equal(networkProperties('off'), [['PrivateNetwork', 'b', true]]);
  const loopback = networkProperties('host-loopback');
  assert.equal(loopback.map(([name, signature]) => [name, signature]), [['IPAddressDeny', 'a(iayu)'], ['IPAddressAllow', 'a(iayu)'], ['IPAccounting', 'b']]);
  const allow = loopback[1]![2] as Array<[number, Buffer, number]>;
  assert.equal(allow.map(([family, address, prefix]) => [family, address.toString('hex'), prefix]), [[2, '7f000000', 8], [10, '00000000000000000000000000000001', 128]]);
  const deny = loopback[0]![2] as Array<[number, Buffer, number]>;
  assert.equal(deny.map(([family, , prefix]) => [family, prefix]), [[2, 0], [10, 0]]);
  throwsCode(() => networkProperties('loopback' as never), 'PROPERTY_INVALID');
});

test('budgets: MemoryMax=, TasksMax=, CPUQuota= (per second), OOMPolicy=continue with memory; the wall clock as RuntimeMaxSec=', () => {
  assert.equal(budgetProperties({ memoryBytes: 1 << 30, tasks: 64, cpuPercent: 50 }), [
    ['MemoryMax', 't', 1n << 30n],
    ['TasksMax', 't', 64n],
    ['CPUQuotaPerSecUSec', 't', 500_000n],
    ['OOMPolicy', 's', 'continue'],
  ]);
  assert.equal(budgetProperties({ tasks: 3 }), [['TasksMax', 't', 3n]]);
  assert.equal(wallClockProperties(600_000), [['RuntimeMaxUSec', 't', 600_000_000n]]);
  assert.equal(wallClockProperties(undefined), []);
  throwsCode(() => wallClockProperties(0), 'PROPERTY_INVALID');
  throwsCode(() => budgetProperties({ tasks: -1 }), 'PROPERTY_INVALID');
  throwsCode(() => budgetProperties({ cpuPercent: 0 }), 'PROPERTY_INVALID');
});

test("the operator's same-name settings apply only where stricter: lower budgets, PrivateNetwork=yes", () => {
  const session = [...budgetProperties({ memoryBytes: 1 << 30, tasks: 64 }), ...networkProperties('off')];
  const operator = limitProperties({ MemoryMax: '512M', TasksMax: 128, PrivateNetwork: false, Nice: 5 });
  const merged = stricterOf(session, operator);
  assert.equal(named(merged.session, 'MemoryMax'), [['MemoryMax', 't', 512n << 20n]]);
  assert.equal(named(merged.session, 'TasksMax'), [['TasksMax', 't', 64n]]);
  assert.equal(named(merged.session, 'PrivateNetwork'), [['PrivateNetwork', 'b', true]]);
  assert.equal(merged.operator, [['Nice', 'i', 5]]);
});

test('in the whole unit: each name once, the request narrowing the operator\'s, the helper\'s OOM score left alone', () => {
  const tuples = sessionUnitProperties(spec({ network: 'off', budgets: { memoryBytes: 256 << 20 }, wallClockMs: 1500, limits: { MemoryMax: '1G', PrivateNetwork: false, RuntimeMaxSec: 1 } }));
  for (const name of ['MemoryMax', 'PrivateNetwork', 'RuntimeMaxUSec', 'OOMPolicy']) assert.is(named(tuples, name).length, 1, name);
  assert.equal(named(tuples, 'MemoryMax'), [['MemoryMax', 't', 256n << 20n]]);
  assert.equal(named(tuples, 'PrivateNetwork'), [['PrivateNetwork', 'b', true]]);
  assert.equal(named(tuples, 'RuntimeMaxUSec'), [['RuntimeMaxUSec', 't', 1_000_000n]], "the operator's shorter wall clock");
  assert.equal(named(tuples, 'OOMScoreAdjust'), []);
  assert.equal(sessionUnitProperties(spec()).filter(([name]) => ['PrivateNetwork', 'MemoryMax', 'OOMPolicy', 'IPAddressDeny'].includes(name)), []);
});

test.run();
