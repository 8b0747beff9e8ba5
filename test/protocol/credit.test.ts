import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FlowError, ReceiveWindow, SendWindow } from '../../src/protocol/credit.ts';
import { Limits } from '../../src/protocol/constants.ts';

test('a receive window refuses bytes beyond the grant with FLOW', () => {
  const window = new ReceiveWindow(10);
  window.receive(6);
  window.receive(4);
  assert.throws(() => window.receive(1), (error: unknown) => error instanceof FlowError && error.code === 'FLOW');
});

test('consumed bytes are granted back once the threshold is owed', () => {
  const window = new ReceiveWindow(100);
  window.receive(100);
  assert.is(window.consume(30, 50), 0);
  assert.is(window.remaining, 0);
  assert.is(window.consume(30, 50), 60);
  assert.is(window.remaining, 60);
  window.receive(60);
  assert.throws(() => window.receive(1));
});

test('a send window hands out at most what was granted', () => {
  const window = new SendWindow(10);
  assert.is(window.take(4), 4);
  assert.is(window.take(100), 6);
  assert.is(window.take(1), 0);
  assert.ok(window.grant(5));
  assert.is(window.available, 5);
});

test('granting past MAX_WINDOW is refused and adds nothing', () => {
  const window = new SendWindow(Limits.MAX_WINDOW - 1);
  assert.ok(window.grant(1));
  assert.not.ok(window.grant(1));
  assert.is(window.available, Limits.MAX_WINDOW);
});

test.run();
