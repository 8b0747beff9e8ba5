// A unit that will not stop: logged with its reason, SIGKILLed, and at worst left for the next start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { reapUnit, type UnitStopper } from '../../src/broker/unit-reaper.ts';
import type { LogLevel } from '../../src/log.ts';

const TIMES = { stopWaitMs: 100, killWaitMs: 50 };

function fake(stops: Array<Error | undefined>, killError?: Error) {
  const calls: string[] = [];
  const units: UnitStopper = {
    async stopAndWait(unit, timeoutMs) {
      calls.push(`stop ${unit} ${timeoutMs}`);
      const outcome = stops.shift();
      if (outcome) throw outcome;
    },
    async kill(unit, signal) {
      calls.push(`kill ${unit} ${signal}`);
      if (killError) throw killError;
    },
  };
  const lines: string[] = [];
  const log = (level: LogLevel, message: string) => lines.push(`${level}: ${message}`);
  return { units, calls, lines, log };
}

const timeout = Object.assign(new Error('u.service: not done within 100 ms'), { code: 'UNIT_WAIT_TIMEOUT' });

test('a unit that stops is stopped once, quietly', async () => {
  const { units, calls, lines, log } = fake([undefined]);
  assert.is(await reapUnit(units, 'u.service', TIMES, log), 'stopped');
  assert.equal(calls, ['stop u.service 100']);
  assert.equal(lines, []);
});

test('a unit that outlasts its stop is SIGKILLed and waited for again, with the reason logged', async () => {
  const { units, calls, lines, log } = fake([timeout, undefined]);
  assert.is(await reapUnit(units, 'u.service', TIMES, log), 'killed');
  assert.equal(calls, ['stop u.service 100', 'kill u.service SIGKILL', 'stop u.service 50']);
  assert.match(lines[0]!, /^warning: cannot stop u.service: .*not done within 100 ms \(UNIT_WAIT_TIMEOUT\); sending SIGKILL/);
});

test('a unit that survives everything is left for the next start and never throws', async () => {
  const closed = Object.assign(new Error('D-Bus connection closed by the bus'), { code: 'DBUS_CLOSED' });
  const { units, lines, log } = fake([closed, closed], closed);
  assert.is(await reapUnit(units, 'u.service', TIMES, log), 'left');
  assert.match(lines.at(-1)!, /^error: u.service still remains .*DBUS_CLOSED.*next start's orphan cleanup/);
  assert.is(lines.length, 3);
});

test.run();
