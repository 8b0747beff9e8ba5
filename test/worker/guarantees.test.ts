// Nothing fails open: each guarantee confirmed from what the kernel shows of the started unit, refused
// where a file is missing, says "max" or more than the budget, or the namespace is not the session's own.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { needsConfirming, readUnitFacts, unconfirmed, type UnitFacts } from '../../src/worker/guarantees.ts';
import type { SessionSandbox } from '../../src/worker/sandbox-request.ts';

const sandbox = (over: Partial<SessionSandbox> = {}): SessionSandbox => ({ profile: 'default', network: 'on', budgets: {}, ...over });
const facts = (files: Record<string, string>, over: Partial<UnitFacts> = {}): UnitFacts => ({
  cgroupFile: (name) => files[name],
  interfaces: ['lo'],
  sockets: 0,
  ipIngressBytes: 0n,
  ...over,
});

test('only a network other than on, or a cgroup budget, needs confirming (the wall clock is systemd\'s own timer)', () => {
  assert.not.ok(needsConfirming(sandbox()));
  assert.not.ok(needsConfirming(sandbox({ budgets: { timeMs: 1000 } })));
  assert.ok(needsConfirming(sandbox({ network: 'off' })));
  assert.ok(needsConfirming(sandbox({ budgets: { tasks: 5 } })));
});

test('budgets: the cgroup v2 file holds the budget or less; absent (cgroup v1, no controller), "max" or more is unconfirmed', () => {
  const memory = sandbox({ budgets: { memoryBytes: 64 << 20 } });
  assert.is(unconfirmed(memory, facts({ 'memory.max': `${64 << 20}\n` })), undefined);
  assert.is(unconfirmed(memory, facts({ 'memory.max': `${32 << 20}\n` })), undefined, 'an operator\'s stricter value');
  assert.match(unconfirmed(memory, facts({}))!, /memory budget: .*no memory.max/);
  assert.match(unconfirmed(memory, facts({ 'memory.max': 'max\n' }))!, /holds max/);
  assert.match(unconfirmed(memory, facts({ 'memory.max': `${(64 << 20) + 4096}\n` }))!, /holds/);
  const tasks = sandbox({ budgets: { tasks: 12 } });
  assert.is(unconfirmed(tasks, facts({ 'pids.max': '12\n' })), undefined);
  assert.match(unconfirmed(tasks, facts({ 'pids.max': 'max\n' }))!, /tasks budget/);
  const cpu = sandbox({ budgets: { cpuPercent: 50 } });
  assert.is(unconfirmed(cpu, facts({ 'cpu.max': '50000 100000\n' })), undefined);
  assert.match(unconfirmed(cpu, facts({ 'cpu.max': 'max 100000\n' }))!, /CPU budget/);
  assert.match(unconfirmed(cpu, facts({ 'cpu.max': '80000 100000\n' }))!, /allows 80 %/);
});

test('network off: only lo and no socket at all in the helper\'s namespace; anything else, or nothing readable, is unconfirmed', () => {
  const off = sandbox({ network: 'off' });
  assert.is(unconfirmed(off, facts({})), undefined);
  assert.match(unconfirmed(off, facts({}, { interfaces: ['lo', 'eth0'] }))!, /interfaces lo, eth0/);
  assert.match(unconfirmed(off, facts({}, { sockets: 3 }))!, /already holds 3 sockets/);
  assert.match(unconfirmed(off, facts({}, { interfaces: undefined }))!, /cannot be read/);
});

test('host-loopback: confirmed by systemd counting the unit\'s traffic (its BPF programs attached); 2^64-1 or nothing is unconfirmed', () => {
  const loopback = sandbox({ network: 'host-loopback' });
  assert.is(unconfirmed(loopback, facts({})), undefined);
  assert.match(unconfirmed(loopback, facts({}, { ipIngressBytes: 0xffff_ffff_ffff_ffffn }))!, /no IP firewall/);
  assert.match(unconfirmed(loopback, facts({}, { ipIngressBytes: undefined }))!, /no IP firewall/);
});

test('a main pid whose cgroup is not the unit\'s (another pid namespace, a reused pid) gives no facts: every guarantee unconfirmed', () => {
  const files: Record<string, string> = {
    '/proc/42/cgroup': '0::/opencode_pty_sessions.slice/other.service\n',
    '/proc/42/net/dev': 'Inter-|\n face |\n    lo: 0\n',
    '/proc/42/net/unix': 'Num\n',
    '/proc/42/net/tcp': 'sl\n',
    '/proc/42/net/udp': 'sl\n',
    '/proc/42/net/raw': 'sl\n',
  };
  const read = (path: string) => files[path];
  const stranger = readUnitFacts(42, 'pty-1.service', 5n, read);
  assert.is(stranger.interfaces, undefined);
  assert.is(stranger.ipIngressBytes, undefined);
  assert.match(unconfirmed(sandbox({ network: 'off' }), stranger)!, /cannot be read/);
  files['/proc/42/cgroup'] = '0::/opencode_pty_sessions.slice/pty-1.service\n';
  const own = readUnitFacts(42, 'pty-1.service', 5n, read);
  assert.equal(own.interfaces, ['lo']);
  assert.is(own.sockets, 0, 'IPv6 tables missing hold no socket');
  files['/proc/42/net/unix'] = 'Num\n0000: 00000002 00000000 00010000 0001 01 1234 /run/systemd/notify\n';
  assert.is(readUnitFacts(42, 'pty-1.service', 5n, read).sockets, 1);
});

test.run();
