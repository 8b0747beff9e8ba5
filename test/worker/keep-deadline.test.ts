// Root's keep deadline of a kept session (keep-deadline.ts, kept-side.ts): never cut short by
// setTimeout's 2^31-1 ms bound, and the config keeps session.maxKeepMs within it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KeptSide } from '../../src/worker/kept-side.ts';
import { KeepDeadline, MAX_TIMER_MS } from '../../src/worker/keep-deadline.ts';
import { parseAccounts } from '../../src/config/accounts.ts';
import { ConfigError, validateConfig } from '../../src/config/schema.ts';

const accounts = parseAccounts(
  'root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/sh\nrootgroup:x:1600:0::/:/bin/sh\n',
  'root:x:0:\nagent:x:1500:\nother:x:1700:\nopencode-pty:x:1800:\nwithagent:x:1900:other,agent\n',
);
const client = { user: 'agent', service: 'agent.service' };

test('session.maxKeepMs is at most 2^31-1 ms (setTimeout\'s bound): 30 days is refused, 24.8 days taken', () => {
  assert.throws(() => validateConfig({ client, session: { maxKeepMs: 30 * 86_400_000 } }, accounts, () => undefined), (error: unknown) => error instanceof ConfigError && /session\.maxKeepMs/.test((error as Error).message));
  const config = validateConfig({ client, session: { maxKeepMs: MAX_TIMER_MS } }, accounts, () => undefined);
  assert.is(config.session.maxKeepMs, MAX_TIMER_MS);
});

test('a keep deadline above setTimeout\'s 2^31-1 ms bound (30 days) is not cut to 1 ms: chained, it has not fired 100 ms later', async () => {
  const keepMs = 30 * 86_400_000;
  assert.is(keepMs > MAX_TIMER_MS, true);
  const side = new KeptSide({
    facts: { sessionId: 1, keepMs, label: '', program: 'sh', cwd: '/', startedAtMs: Date.now(), rows: 24, cols: 80, programPid: 2, mainPid: 3, origin: 1 },
    link: undefined,
    writeTimeoutMs: 1000,
    detached: () => undefined,
    attached: () => undefined,
    log: () => undefined,
  });
  let fired = false;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => void warnings.push(warning.name);
  process.on('warning', onWarning);
  try {
    side.arm(() => void (fired = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.is(fired, false, `a ${keepMs} ms keep deadline fired within 100 ms (${warnings.join(', ')})`);
    assert.equal(warnings, []);
  } finally {
    process.off('warning', onWarning);
    side.closeAll();
  }
});

test('a keep deadline fires once when it passes, and not at all once disarmed; `at` says when', async () => {
  const deadline = new KeepDeadline();
  let fired = 0;
  const before = Date.now();
  const passed = new Promise<void>((resolve) => deadline.arm(30, () => resolve(void (fired += 1))));
  assert.ok(deadline.at! >= before + 30 && deadline.at! <= Date.now() + 30);
  await passed;
  assert.ok(Date.now() >= before + 30, 'not before its time');
  assert.is(fired, 1);
  assert.is(deadline.at, undefined);
  deadline.arm(30, () => void (fired += 1));
  deadline.disarm();
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.is(fired, 1);
});

test.run();
