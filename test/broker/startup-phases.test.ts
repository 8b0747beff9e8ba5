// The broker's start-up line (startup-phases.ts): each phase is the time since the one before, the
// total since the process's start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StartupPhases } from '../../src/broker/startup-phases.ts';

test('each phase is the time since the last, rounded; the total is the last mark', () => {
  const times = [61.4, 63.2, 81.9, 92.6];
  const phases = new StartupPhases(() => times.shift()!);
  for (const name of ['node and bundle', 'config', 'bus', 'orphan scan']) phases.mark(name);
  assert.is(phases.line(), 'ready 93 ms after its start: node and bundle 61, config 2, bus 19, orphan scan 11');
});

test.run();
