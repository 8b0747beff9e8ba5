// Which START may draw a warm unit, and what the unit is before any START (pure).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { testConfig } from '../support/config-fixture.ts';
import { WARM_DESCRIPTION, sandboxFitsWarm, warmFits, warmUnitSpec, warmWallClockMs } from '../../src/worker/warm-plan.ts';
import { planStart } from '../../src/worker/start-plan.ts';

const withProperties = (properties: Record<string, unknown>, warmUnits = 1) => testConfig({ session: { ...DEFAULT_SESSION, properties, warmUnits } });

test('the warm unit is a fresh unit less its START: --warm alone, the account, slice, profile and properties, no environment', () => {
  const config = testConfig({ session: { ...DEFAULT_SESSION, minProfile: 'hardened', properties: { MemoryMax: 1 << 30, TasksMax: 64 } } });
  const spec = warmUnitSpec(config, '/usr/lib/helper');
  const fresh = planStart({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [] }, config, '/usr/lib/helper', 2, [], undefined, '/srv/proj').spec;
  assert.equal(spec.helperArgs, ['--warm']);
  assert.is(spec.description, WARM_DESCRIPTION);
  assert.equal(spec.environment, {});
  for (const key of ['helperPath', 'user', 'group', 'slice', 'stopTimeoutSec', 'limits', 'profile'] as const) assert.equal(spec[key], fresh[key], key);
});

test('RuntimeMaxSec is left out of the warm unit (it counts from activation) and becomes the wall clock from START', () => {
  const config = withProperties({ RuntimeMaxSec: 90, MemoryMax: 1 << 30 });
  assert.equal(warmUnitSpec(config, '/h').limits, { MemoryMax: 1 << 30 });
  assert.is(warmWallClockMs(config), 90_000);
  assert.is(warmWallClockMs(withProperties({ RuntimeMaxSec: 0.5 })), 500);
  assert.is(warmWallClockMs(withProperties({ RuntimeMaxSec: 'infinity' })), undefined);
  assert.is(warmWallClockMs(withProperties({})), undefined);
});

test('a kept START with a wall clock takes a fresh unit; warmUnits 0 takes none', () => {
  assert.ok(warmFits(withProperties({}), false));
  assert.ok(warmFits(withProperties({}), true));
  assert.ok(warmFits(withProperties({ RuntimeMaxSec: 90 }), false));
  assert.not.ok(warmFits(withProperties({ RuntimeMaxSec: 90 }), true));
  assert.not.ok(warmFits(withProperties({}, 0), false));
});

test("a START's sandbox fits the warm unit only as the floor's profile, the network on and no budget", () => {
  const config = testConfig({ session: { ...DEFAULT_SESSION, minProfile: 'default' } });
  assert.ok(sandboxFitsWarm({ profile: 'default', network: 'on', budgets: {} }, config));
  assert.ok(sandboxFitsWarm({ profile: 'default', network: 'on', budgets: { memoryBytes: undefined } }, config));
  assert.not.ok(sandboxFitsWarm({ profile: 'hardened', network: 'on', budgets: {} }, config), 'a profile above the floor');
  assert.not.ok(sandboxFitsWarm({ profile: 'default', network: 'off', budgets: {} }, config), 'PrivateNetwork= cannot be set on a running unit');
  assert.not.ok(sandboxFitsWarm({ profile: 'default', network: 'host-loopback', budgets: {} }, config));
  assert.not.ok(sandboxFitsWarm({ profile: 'default', network: 'on', budgets: { timeMs: 1000 } }, config), 'a budget is confirmed on its unit');
});

test.run();
