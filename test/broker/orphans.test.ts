// Orphans: each holds a session slot until its unit is gone, all stop at once, and the recheck after
// a bus reconnection stops only units no live worker claims, twice seen.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionSlots } from '../../src/broker/session-slots.ts';
import { ORPHAN_STOP_MARGIN_MS, Orphans } from '../../src/broker/orphans.ts';
import type { LogLevel } from '../../src/log.ts';

function fake(loaded: string[]) {
  const stops = new Map<string, () => void>();
  const calls: string[] = [];
  const lines: string[] = [];
  let changes = 0;
  const slots = new SessionSlots(4);
  const orphans = new Orphans({
    units: {
      async listUnitsByPrefix(prefix) {
        calls.push(`list ${prefix}`);
        return [...loaded];
      },
      stopAndWait(unit, timeoutMs) {
        calls.push(`stop ${unit} ${timeoutMs}`);
        return new Promise<void>((resolve) => stops.set(unit, resolve));
      },
      async kill() {},
    },
    slots,
    log: (level: LogLevel, message: string) => lines.push(`${level}: ${message}`),
    prefix: 'p-session-',
    stopTimeoutSec: 3,
    killWaitMs: 50,
    changed: () => (changes += 1),
  });
  return { orphans, stops, calls, lines, slots, changes: () => changes };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('orphans stop all at once, each bounded by its stop timeout plus the margin, each holding a slot until gone', async () => {
  const { orphans, stops, calls, slots, changes } = fake(['p-session-a.service', 'p-session-b.service']);
  for (const unit of await orphans.list()) orphans.reap(unit);
  orphans.reap('p-session-a.service');
  assert.equal(calls, ['list p-session-', `stop p-session-a.service ${3000 + ORPHAN_STOP_MARGIN_MS}`, `stop p-session-b.service ${3000 + ORPHAN_STOP_MARGIN_MS}`]);
  assert.is(orphans.size, 2);
  assert.is(slots.used, 2);
  stops.get('p-session-a.service')!();
  await tick();
  assert.is(orphans.size, 1);
  assert.ok(orphans.has('p-session-b.service'));
  assert.is(slots.used, 1);
  assert.is(changes(), 1);
});

test('the recheck stops a unit no worker claims only when a second look still finds it', async () => {
  const { orphans, calls, lines } = fake(['p-session-mine.service', 'p-session-lost.service']);
  const owner = { claimed: () => new Set(['p-session-mine.service']), sessions: () => 1, stopping: () => false };
  await orphans.recheck(owner, 1);
  assert.equal(calls.filter((c) => c.startsWith('stop')), [`stop p-session-lost.service ${3000 + ORPHAN_STOP_MARGIN_MS}`]);
  assert.ok(lines.includes('info: after the D-Bus reconnection: 1 sessions, 1 units unclaimed'), lines.join('\n'));
  assert.ok(lines.includes('notice: stopping p-session-lost.service, which no worker claims after the D-Bus reconnection'), lines.join('\n'));
});

test('the recheck stops nothing while the broker shuts down, and a failed listing is only logged', async () => {
  const { orphans, calls } = fake(['p-session-lost.service']);
  await orphans.recheck({ claimed: () => new Set(), sessions: () => 0, stopping: () => true }, 1);
  assert.not.ok(calls.some((c) => c.startsWith('stop')));
  const failing = new Orphans({
    units: { listUnitsByPrefix: async () => Promise.reject(new Error('bus gone')), stopAndWait: async () => {}, kill: async () => {} },
    slots: new SessionSlots(1),
    log: (level, message) => calls.push(`${level}: ${message}`),
    prefix: 'p-session-',
    stopTimeoutSec: 1,
    killWaitMs: 1,
    changed: () => undefined,
  });
  await failing.recheck({ claimed: () => new Set(), sessions: () => 0, stopping: () => false }, 1);
  assert.ok(calls.includes('warning: re-checking session units after the D-Bus reconnection: bus gone'));
});

test.run();
