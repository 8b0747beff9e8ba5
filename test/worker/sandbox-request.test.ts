// What a START gets of profile, network and budgets: the floor and ceilings refuse, never widen or narrow
// in silence; a START that asks nothing (any version) gets the floor and the defaults.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SANDBOX, type SandboxConfig } from '../../src/config/sandbox.ts';
import { ErrorCode, SessionError, type FrameOf } from '../../src/protocol/index.ts';
import { HELPER_MEMORY_BYTES, resolveSandbox } from '../../src/worker/sandbox-request.ts';

const START: FrameOf<'start'> = { type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [] };
const budgets = (over: Partial<SandboxConfig['budgets']> = {}): SandboxConfig['budgets'] => ({ ...DEFAULT_SANDBOX.budgets, ...over });

function refused(frame: Partial<FrameOf<'start'>>, config: SandboxConfig, code: number, text: RegExp, ringBytes = 0): void {
  let caught: unknown;
  try {
    resolveSandbox({ ...START, ...frame }, config, ringBytes);
  } catch (error) {
    caught = error;
  }
  assert.instance(caught, SessionError, JSON.stringify(frame));
  assert.is((caught as SessionError).wireCode, code, (caught as Error).message);
  assert.match((caught as Error).message, text);
}

test('nothing asked (versions 1..3, or a version 4 START that names nothing): the floor and the defaults, today\'s sessions with the default config', () => {
  assert.equal(resolveSandbox(START, DEFAULT_SANDBOX), { profile: 'default', network: 'on', budgets: {} });
  const strict: SandboxConfig = { ...DEFAULT_SANDBOX, minProfile: 'hardened', profiles: ['hardened'], maxNetwork: 'host-loopback', defaultNetwork: 'off', budgets: budgets({ tasks: { max: 64, default: 32 } }) };
  assert.equal(resolveSandbox({ ...START, profile: '' }, strict), { profile: 'hardened', network: 'off', budgets: { tasks: 32 } });
});

test('profiles: the floor is never lowered, an unknown name or one not offered is refused PROFILE', () => {
  const floor: SandboxConfig = { ...DEFAULT_SANDBOX, minProfile: 'hardened', profiles: ['hardened'] };
  refused({ profile: 'default' }, floor, ErrorCode.PROFILE, /below this server's floor \(session.minProfile hardened\)/);
  refused({ profile: 'paranoid' }, floor, ErrorCode.PROFILE, /unknown profile "paranoid"/);
  refused({ profile: 'hardened' }, { ...DEFAULT_SANDBOX, profiles: ['default'] }, ErrorCode.PROFILE, /not offered here/);
  assert.is(resolveSandbox({ ...START, profile: 'hardened' }, DEFAULT_SANDBOX).profile, 'hardened');
});

test('network: at or below the ceiling as asked; above it refused NETWORK (on under an off ceiling)', () => {
  const off: SandboxConfig = { ...DEFAULT_SANDBOX, maxNetwork: 'off', defaultNetwork: 'off' };
  refused({ network: 'on' }, off, ErrorCode.NETWORK, /network on is above this server's ceiling \(session.maxNetwork off\)/);
  refused({ network: 'host-loopback' }, off, ErrorCode.NETWORK, /above this server's ceiling/);
  refused({ network: 'loopback' as never }, DEFAULT_SANDBOX, ErrorCode.NETWORK, /unknown network mode/);
  assert.is(resolveSandbox({ ...START, network: 'off' }, DEFAULT_SANDBOX).network, 'off');
  assert.is(resolveSandbox({ ...START, network: 'host-loopback' }, { ...DEFAULT_SANDBOX, maxNetwork: 'host-loopback', defaultNetwork: 'off' }).network, 'host-loopback');
});

test('budgets: 0, negative, fractional, 2^64 and past the ceiling are refused BUDGET; within it as asked; the rest defaulted', () => {
  const limited: SandboxConfig = { ...DEFAULT_SANDBOX, budgets: budgets({ timeMs: { max: 600_000, default: 60_000 }, cpuPercent: { max: 200, default: null } }) };
  for (const bad of [0, -1, 1.5, 2 ** 64, Number.NaN]) refused({ budgets: { tasks: bad } }, limited, ErrorCode.BUDGET, /budget tasks .* is outside 1..2\^53-1/);
  refused({ budgets: { timeMs: 600_001 } }, limited, ErrorCode.BUDGET, /wall clock \(ms\) budget 600001 is past this server's ceiling 600000 \(session.budgets.timeMs.max\)/);
  refused({ budgets: { cpuPercent: 201 } }, limited, ErrorCode.BUDGET, /CPU \(%\) budget 201 is past/);
  assert.equal(resolveSandbox({ ...START, budgets: { cpuPercent: 50, tasks: 10 } }, limited).budgets, { timeMs: 60_000, tasks: 10, cpuPercent: 50 });
});

test('a memory budget below the kept ring and the helper\'s own needs is refused BUDGET', () => {
  const ring = 2 << 20;
  refused({ budgets: { memoryBytes: HELPER_MEMORY_BYTES + ring - 1 } }, DEFAULT_SANDBOX, ErrorCode.BUDGET, /below what the session itself needs/, ring);
  assert.is(resolveSandbox({ ...START, budgets: { memoryBytes: HELPER_MEMORY_BYTES + ring } }, DEFAULT_SANDBOX, ring).budgets.memoryBytes, HELPER_MEMORY_BYTES + ring);
  // A default below it refuses every START alike: the operator learns it from the first one.
  refused({}, { ...DEFAULT_SANDBOX, budgets: budgets({ memoryBytes: { max: null, default: 1 << 20 } }) }, ErrorCode.BUDGET, /below what the session itself needs/);
});

test('a START above a default floor that asks for the workspace profile gets it, with a memory budget too (the guarantee check judges it)', () => {
  assert.is(resolveSandbox({ ...START, profile: 'workspace' }, DEFAULT_SANDBOX).profile, 'workspace');
  assert.equal(resolveSandbox({ ...START, profile: 'workspace', budgets: { memoryBytes: 1 << 30 } }, DEFAULT_SANDBOX).budgets.memoryBytes, 1 << 30);
  const floor = resolveSandbox(START, { ...DEFAULT_SANDBOX, minProfile: 'workspace', budgets: budgets({ memoryBytes: { max: null, default: 1 << 30 } }) });
  assert.equal([floor.profile, floor.budgets.memoryBytes], ['workspace', 1 << 30]);
});

test('with no ceiling of the operator\'s, a budget past what systemd can keep is refused BUDGET, not left to the unit', () => {
  refused({ budgets: { cpuPercent: 100_001 } }, DEFAULT_SANDBOX, ErrorCode.BUDGET, /CPU \(%\) budget 100001 is past the most a session can be given \(100000\)/);
  refused({ budgets: { tasks: 4_194_305 } }, DEFAULT_SANDBOX, ErrorCode.BUDGET, /tasks budget 4194305 is past/);
  assert.equal(resolveSandbox({ ...START, budgets: { tasks: 4_194_304, cpuPercent: 100_000 } }, DEFAULT_SANDBOX).budgets, { tasks: 4_194_304, cpuPercent: 100_000 });
});

test.run();
