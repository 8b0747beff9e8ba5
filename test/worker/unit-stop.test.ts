// systemd's figures of a session unit: read once, whoever asks first (a stop of ours before its stop,
// the end record without the helper's own, the journal's line at the end), the same answer for all.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Config } from '../../src/config/schema.ts';
import type { Units } from '../../src/systemd/bus-session.ts';
import { UnitStop } from '../../src/worker/unit-stop.ts';

const UNIT = 'opencode-pty-session-0b.service';

test('read once, by name, however often asked', async () => {
  const reads: string[] = [];
  const manager = {
    async unitProperties(unit: string) {
      reads.push(unit);
      return { CPUUsageNSec: 99n, MemoryCurrent: 2n ** 64n - 1n };
    },
  } as unknown as Units;
  const units = new UnitStop({ manager, config: {} as Config, log: () => undefined });
  units.named(UNIT);
  const first = units.figures();
  assert.is(units.figures(), first);
  assert.equal(await first, { CPU_USAGE_NSEC: 99n });
  assert.equal(reads, [UNIT]);
});

test.run();
