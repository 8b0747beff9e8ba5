// Tarpit: refusals answered after the delay, in order; at once past the bound or once closed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tarpit } from '../../src/broker/tarpit.ts';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('held refusals are answered after the delay, in the order they came', async () => {
  let now = 0;
  const sent: number[] = [];
  const tarpit = new Tarpit<number>((n) => sent.push(n), { delayMs: 20, now: () => now });
  tarpit.hold(1);
  now = 5;
  tarpit.hold(2);
  assert.equal(sent, []);
  assert.is(tarpit.size, 2);
  now = 20;
  await tick(30);
  assert.equal(sent, [1], 'the second is not due yet');
  now = 25;
  await tick(30);
  assert.equal(sent, [1, 2]);
  assert.is(tarpit.size, 0);
});

test('past the bound a refusal is answered at once; close answers every held one', () => {
  const sent: number[] = [];
  const tarpit = new Tarpit<number>((n) => sent.push(n), { delayMs: 60_000, maxHeld: 3 });
  for (let i = 0; i < 5; i += 1) tarpit.hold(i);
  assert.equal(sent, [3, 4]);
  assert.is(tarpit.size, 3);
  tarpit.close();
  assert.equal(sent, [3, 4, 0, 1, 2]);
  tarpit.hold(9);
  assert.equal(sent, [3, 4, 0, 1, 2, 9], 'closed: at once');
  assert.is(tarpit.size, 0);
});

test('a long flood through the tarpit: every refusal answered, none left held', async () => {
  let now = 0;
  let sent = 0;
  const tarpit = new Tarpit<number>(() => (sent += 1), { delayMs: 1, maxHeld: 1000, now: () => now });
  for (let round = 0; round < 50; round += 1) {
    for (let i = 0; i < 100; i += 1) tarpit.hold(i);
    now += 2;
    await tick(5);
  }
  assert.is(sent, 5000);
  assert.is(tarpit.size, 0);
});

test.run();
