// The spare's warm-up: it runs a whole start's pure path without failing, and a failure is reported, never thrown.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { testConfig } from '../support/config-fixture.ts';
import { warmUp } from '../../src/worker/warm-up.ts';

const config = testConfig({ session: { ...DEFAULT_SESSION, properties: { MemoryMax: 1 << 30 } } });

test('the whole path runs: frames, unit name, properties, the D-Bus codec', () => {
  assert.is(warmUp(config, '/usr/lib/opencode-pty/opencode-pty-session'), undefined);
});

test('a failure comes back as its message', () => {
  const message = warmUp({ ...config, unitPrefix: '@bad' }, '/x');
  assert.type(message, 'string');
  assert.match(message!, /prefix/);
});

test.run();
