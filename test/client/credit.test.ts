// The client's credit bookkeeping: grants follow reads in batches, overruns and over-grants are caught.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Limits } from '../../src/protocol/index.ts';
import { GRANT_BATCH, InputWindow, OutputWindow } from '../../src/client/credit.ts';

test('OUTPUT credit is granted only for bytes read, in batches', () => {
  const window = new OutputWindow();
  assert.ok(window.receive(Limits.INITIAL_WINDOW));
  assert.is(window.serverWindow, 0);
  assert.is(window.grant(Limits.INITIAL_WINDOW), 0, 'nothing read yet');
  assert.is(window.grant(Limits.INITIAL_WINDOW - GRANT_BATCH + 1), 0, 'less than a batch read');
  assert.is(window.grant(Limits.INITIAL_WINDOW - GRANT_BATCH), GRANT_BATCH);
  assert.is(window.serverWindow, GRANT_BATCH);
  assert.is(window.grant(0), Limits.INITIAL_WINDOW - GRANT_BATCH, 'the rest once all is read');
  assert.is(window.serverWindow, Limits.INITIAL_WINDOW);
});

test('OUTPUT beyond the window is refused', () => {
  const window = new OutputWindow();
  assert.ok(window.receive(Limits.INITIAL_WINDOW - 1));
  assert.not.ok(window.receive(2));
  assert.ok(window.receive(1));
});

test('INPUT credit: take at most what is there; grants beyond MAX_WINDOW are refused', () => {
  const window = new InputWindow();
  assert.is(window.take(Limits.INITIAL_WINDOW + 5), Limits.INITIAL_WINDOW);
  assert.is(window.take(1), 0);
  assert.ok(window.grant(10));
  assert.is(window.take(100), 10);
  assert.ok(window.grant(Limits.MAX_WINDOW));
  assert.not.ok(window.grant(1));
});

test.run();
