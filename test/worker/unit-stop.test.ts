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

test("STOP's steps: the hang-up alone to the helper (which passes it to the program's group), then after the grace SIGTERM and SIGHUP to the unit, SIGKILL a step later, the unit's stop as the backstop", async () => {
  const calls: string[] = [];
  const started = Date.now();
  const at = () => Math.round((Date.now() - started) / 100) / 10;
  const manager = {
    async kill(unit: string, signal: string, who = 'all') {
      calls.push(`${signal} ${who} ${at()}`);
      assert.is(unit, UNIT);
    },
    async stopAndWait() {
      calls.push(`stop ${at()}`);
    },
    async unitProperties() {
      return {};
    },
  } as unknown as Units;
  const config = { session: { stopTimeoutSec: 1 }, limits: { operationTimeoutMs: 1000 } } as Config;
  const units = new UnitStop({ manager, config, log: () => undefined });
  units.named(UNIT);
  const stopped = new Promise<void>((resolve) => {
    void units.stopSteps(() => calls.push(`KILL ${at()}`));
    const check = setInterval(() => {
      if (calls.some((call) => call.startsWith('stop'))) {
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  await stopped;
  units.clearTimers();
  // Times in tenths of a second: HANG_UP_GRACE_MS is 1 s, stopTimeoutSec 1 s here.
  const names = calls.map((call) => call.split(' ').slice(0, -1).join(' '));
  assert.equal(names, ['SIGHUP main', 'SIGTERM all', 'SIGHUP all', 'KILL', 'stop']);
  const times = calls.map((call) => Number(call.split(' ').pop()));
  assert.ok(times[0]! < 0.3, `the hang-up at once: ${calls}`);
  assert.ok(times[1]! >= 0.9 && times[1]! < 1.5, `SIGTERM after the grace, not with the hang-up: ${calls}`);
  assert.ok(times[3]! >= 1.9, `SIGKILL a step later: ${calls}`);
  assert.ok(times[4]! >= 2.9, `the unit's stop a step after that: ${calls}`);
});

test("a warm session's wall clock: SIGTERM and SIGHUP to the unit, and its end told with result timeout, as systemd's RuntimeMaxSec", async () => {
  const calls: string[] = [];
  let exited: (exit: { code: number; status: number; result: string }) => void = () => undefined;
  const manager = {
    async kill(_unit: string, signal: string) {
      calls.push(signal);
    },
    waitForExit: () => new Promise((resolve) => (exited = resolve)),
    async stopAndWait() {
      calls.push('stop');
    },
  } as unknown as Units;
  const told: unknown[] = [];
  const units = new UnitStop({ manager, config: { session: { stopTimeoutSec: 60 } } as Config, log: () => undefined, inactive: (exit) => void told.push(exit) });
  units.named(UNIT);
  units.watch();
  units.expire();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(calls, ['SIGTERM', 'SIGHUP']);
  exited({ code: 2, status: 15, result: 'success' });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(told, [{ code: 2, status: 15, result: 'timeout' }]);
  units.clearTimers();
});

test.run();
