// The session's figures at its end: the helper's own reading of its cgroup (FIGURES) when it came,
// with no property read over D-Bus (eight of them queued in front of the unit's end signal); systemd's
// when a stop of ours needed them first, or when the helper sent none.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Config } from '../../src/config/schema.ts';
import type { Units } from '../../src/systemd/bus-session.ts';
import { UnitStop } from '../../src/worker/unit-stop.ts';

const UNIT = 'opencode-pty-session-0b.service';

function setUp() {
  const reads: string[] = [];
  const manager = {
    async unitProperties(unit: string) {
      reads.push(unit);
      return { CPUUsageNSec: 99n };
    },
  } as unknown as Units;
  const units = new UnitStop({ manager, config: {} as Config, log: () => undefined });
  units.named(UNIT);
  return { units, reads };
}

test("the helper's figures are the session's, without asking systemd", async () => {
  const { units, reads } = setUp();
  units.reported({ CPU_USAGE_NSEC: 3000n, TASKS_CURRENT: 2n });
  assert.equal(await units.figures(), { CPU_USAGE_NSEC: 3000n, TASKS_CURRENT: 2n });
  assert.equal(reads, []);
});

test('without them, or once systemd was asked first, the figures are systemd’s, read once', async () => {
  const none = setUp();
  assert.equal(await none.units.figures(), { CPU_USAGE_NSEC: 99n });
  const first = setUp();
  const asked = first.units.figures();
  first.units.reported({ CPU_USAGE_NSEC: 1n });
  assert.equal(await asked, { CPU_USAGE_NSEC: 99n });
  assert.equal(await first.units.figures(), { CPU_USAGE_NSEC: 99n });
  assert.equal(first.reads, [UNIT]);
});

test.run();
