// The broker's idle exit (idle-exit.ts): armed while idle, and disarmed by a look while busy, so a
// timer armed at the start does not fire once the adoptions begun then hold their sessions.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { IdleExit, type Timers } from '../../src/broker/idle-exit.ts';

function clock() {
  const armed = new Map<number, () => void>();
  let next = 0;
  const timers: Timers = { set: (fire) => (armed.set(++next, fire), next), clear: (timer) => void armed.delete(timer as number) };
  return { timers, armed, fireAll: () => [...armed.values()].forEach((fire) => fire()) };
}

test('idle: armed once, anew at each look; busy: disarmed', () => {
  const { timers, armed, fireAll } = clock();
  let exits = 0;
  const idle = new IdleExit(1500, () => (exits += 1), timers);
  idle.look(true);
  idle.look(true);
  assert.is(armed.size, 1, 'one timer, armed anew');
  idle.look(false);
  assert.is(armed.size, 0, 'a look while busy disarms the timer armed while idle');
  fireAll();
  assert.is(exits, 0);
  idle.look(true);
  fireAll();
  assert.is(exits, 1);
});

test('idleMs 0 never arms; cancel disarms', () => {
  const { timers, armed } = clock();
  new IdleExit(0, () => undefined, timers).look(true);
  assert.is(armed.size, 0);
  const idle = new IdleExit(10, () => undefined, timers);
  idle.look(true);
  idle.cancel();
  assert.is(armed.size, 0);
});

test.run();
