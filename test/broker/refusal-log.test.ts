// Refusals: one line per peer per episode, a closing count, bounded keys.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RefusalLog } from '../../src/broker/refusal-log.ts';

test('the first refusal of a peer opens an episode; the rest are counted, then summed up once', () => {
  const log = new RefusalLog(10_000, 4);
  assert.match(log.record('/system.slice/x.service', 'not inside agent.service', 'pid 5', 0)!, 'refused "/system.slice/x.service": not inside agent.service (pid 5)');
  for (let i = 1; i < 1000; i += 1) assert.is(log.record('/system.slice/x.service', 'not inside agent.service', `pid ${5 + i}`, i), undefined);
  assert.equal(log.expire(5_000), []);
  assert.equal(log.expire(11_000), ['refused "/system.slice/x.service" 1000 times over 1.0 s: not inside agent.service']);
  assert.is(log.open, 0);
  assert.ok(log.record('/system.slice/x.service', 'again', 'pid 1', 20_000), 'a new episode after a quiet spell');
});

test('a single refusal closes silently; keys beyond the bound share one episode', () => {
  const log = new RefusalLog(10, 2);
  assert.ok(log.record('a', 'r', 'd', 0));
  assert.ok(log.record('b', 'r', 'd', 0));
  assert.ok(log.record('c', 'r', 'd', 0), 'the overflow key opens once');
  assert.is(log.record('d', 'r', 'd', 0), undefined);
  assert.is(log.open, 3);
  assert.equal(log.expire(100), ['refused "(other peers)" 2 times over 0.0 s: r']);
});

test.run();
