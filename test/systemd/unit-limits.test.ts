// limitProperties: the allowlist, each value check, and the conversions to D-Bus names and units.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ALLOWED_LIMIT_NAMES, limitProperties } from '../../src/systemd/unit-limits.ts';
import { throwsCode } from './helpers.ts';

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;

test('sizes: integers, K/M/G/T suffixes (1024-based), bigint and "infinity"', () => {
  assert.equal(limitProperties({ MemoryMax: 1000, MemoryHigh: '2K', MemorySwapMax: '0', LimitCORE: 'infinity', LimitAS: '3G', LimitFSIZE: 5n }), [
    ['MemoryMax', 't', 1000n],
    ['MemoryHigh', 't', 2048n],
    ['MemorySwapMax', 't', 0n],
    ['LimitCORE', 't', UINT64_MAX],
    ['LimitAS', 't', 3n << 30n],
    ['LimitFSIZE', 't', 5n],
  ]);
});

test('counts take no suffix; negative, fractional and oversize values are refused', () => {
  assert.equal(limitProperties({ TasksMax: 64, LimitNOFILE: 1024 }), [
    ['TasksMax', 't', 64n],
    ['LimitNOFILE', 't', 1024n],
  ]);
  for (const value of ['64K', -1, 1.5, UINT64_MAX + 1n, '', 'lots', true, null, Number.MAX_SAFE_INTEGER + 2]) {
    throwsCode(() => limitProperties({ TasksMax: value }), 'PROPERTY_INVALID');
  }
  throwsCode(() => limitProperties({ MemoryMax: '1P' }), 'PROPERTY_INVALID');
});

test('CPUQuota becomes CPUQuotaPerSecUSec, 1% = 10 000 µs per second', () => {
  assert.equal(limitProperties({ CPUQuota: '50%' }), [['CPUQuotaPerSecUSec', 't', 500_000n]]);
  assert.equal(limitProperties({ CPUQuota: 200 }), [['CPUQuotaPerSecUSec', 't', 2_000_000n]]);
  assert.equal(limitProperties({ CPUQuota: '12.5%' }), [['CPUQuotaPerSecUSec', 't', 125_000n]]);
  for (const value of [0, -5, '50', 'half', '%', Infinity]) throwsCode(() => limitProperties({ CPUQuota: value }), 'PROPERTY_INVALID');
});

test('RuntimeMaxSec becomes RuntimeMaxUSec in microseconds', () => {
  assert.equal(limitProperties({ RuntimeMaxSec: 1.5 }), [['RuntimeMaxUSec', 't', 1_500_000n]]);
  assert.equal(limitProperties({ RuntimeMaxSec: 'infinity' }), [['RuntimeMaxUSec', 't', UINT64_MAX]]);
  for (const value of [0, -1, '10', NaN]) throwsCode(() => limitProperties({ RuntimeMaxSec: value }), 'PROPERTY_INVALID');
});

test('booleans must be booleans', () => {
  assert.equal(limitProperties({ PrivateTmp: false, LockPersonality: true }), [
    ['PrivateTmp', 'b', false],
    ['LockPersonality', 'b', true],
  ]);
  for (const value of ['yes', 1, 0, null]) throwsCode(() => limitProperties({ NoNewPrivileges: value }), 'PROPERTY_INVALID');
});

test('enumerations: ProtectSystem and ProtectHome take their words, or booleans as yes/no', () => {
  assert.equal(limitProperties({ ProtectSystem: 'strict', ProtectHome: true }), [
    ['ProtectSystem', 's', 'strict'],
    ['ProtectHome', 's', 'yes'],
  ]);
  assert.equal(limitProperties({ ProtectHome: 'read-only', ProtectSystem: false }), [
    ['ProtectHome', 's', 'read-only'],
    ['ProtectSystem', 's', 'no'],
  ]);
  throwsCode(() => limitProperties({ ProtectSystem: 'maximal' }), 'PROPERTY_INVALID');
  throwsCode(() => limitProperties({ ProcSubset: true }), 'PROPERTY_INVALID');
});

test('integers with ranges: Nice, OOMScoreAdjust, UMask', () => {
  assert.equal(limitProperties({ Nice: -5, OOMScoreAdjust: 500, UMask: 0o077 }), [
    ['Nice', 'i', -5],
    ['OOMScoreAdjust', 'i', 500],
    ['UMask', 'u', 0o077],
  ]);
  throwsCode(() => limitProperties({ Nice: 20 }), 'PROPERTY_INVALID');
  throwsCode(() => limitProperties({ OOMScoreAdjust: -1001 }), 'PROPERTY_INVALID');
  throwsCode(() => limitProperties({ UMask: 0o1000 }), 'PROPERTY_INVALID');
});

test('every allowlisted name converts a valid value (no name is listed without a converter)', () => {
  const sample: Record<string, unknown> = {};
  for (const name of ALLOWED_LIMIT_NAMES) {
    sample[name] = ['ProtectSystem', 'ProtectHome'].includes(name)
      ? 'yes'
      : name === 'ProtectProc'
        ? 'invisible'
        : name === 'ProcSubset'
          ? 'pid'
          : name === 'CPUQuota'
            ? '10%'
            : /^(No|Private|Protect|Restrict|Lock|MemoryDeny)/.test(name)
              ? true
              : 1;
  }
  assert.is(limitProperties(sample).length, ALLOWED_LIMIT_NAMES.length);
});

test('names outside the allowlist, including inherited object keys, are refused', () => {
  for (const name of ['User', 'ExecStart', 'KillMode', 'DynamicUser', 'CapabilityBoundingSet', 'memorymax', 'toString', 'hasOwnProperty']) {
    throwsCode(() => limitProperties({ [name]: 1 }), 'PROPERTY_NOT_ALLOWED');
  }
});

test.run();
