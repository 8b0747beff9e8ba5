// A fresh look that fails for the supervisor's own reason (the clock unreadable: EMFILE on
// /proc/uptime) is the supervisor's failure, as the accept gate has it (identityRefusal: INTERNAL
// with its cause), whether or not an old snapshot answered first: a provisional answer's
// confirmation carries it as `failure` (it never rejects), which the broker throws.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ClientService } from '../../src/identity/client-service.ts';
import type { ServiceState } from '../../src/systemd/unit-manager.ts';

const SERVICE = 'agent.service';
const live: ServiceState = { activeState: 'active', subState: 'running', mainPid: 7, controlGroup: '/system.slice/agent.service', invocationId: Buffer.alloc(16, 1) };
const emfile = () => Object.assign(new Error("open '/proc/uptime': too many open files"), { code: 'EMFILE' });

/** A service read once (live), then, with the snapshot old, its clock fails. */
async function withFailingClock(afterRead: ServiceState) {
  let now = 0;
  let clockFails = false;
  const service = new ClientService(SERVICE, async () => afterRead, {
    ttlMs: 1000,
    now: () => now,
    ticks: () => {
      if (clockFails) throw emfile();
      return 100;
    },
  });
  await service.contains('/system.slice/agent.service', 50);
  now = 5000;
  clockFails = true;
  return service;
}

/** How a look ends: 'supervisor failed' (a rejection: the broker answers INTERNAL) or the answer. */
async function outcome(look: Promise<{ inside: boolean }>): Promise<string> {
  try {
    return (await look).inside ? 'inside' : 'not inside';
  } catch {
    return 'supervisor failed';
  }
}

test('the same clock failure is the supervisor\'s, provisional answer or not', async () => {
  // No provisional answer (the old snapshot does not put the peer inside): the look rejects.
  const starting = await withFailingClock({ ...live, activeState: 'activating', subState: 'start' });
  const direct = await outcome(starting.containsProvisionally('/system.slice/agent.service', 150));
  // A provisional answer (the old snapshot puts it inside): its confirmation.
  const running = await withFailingClock(live);
  const provisional = await running.containsProvisionally('/system.slice/agent.service', 150);
  assert.ok(provisional.provisional);
  const confirmed = await outcome(provisional.confirmed.then((look) => { if (look.failure) throw look.failure; return look; }));
  assert.is(direct, 'supervisor failed');
  assert.is(confirmed, direct, 'the confirmation carries the failure, not a plain "not inside" (AUTHENTICATION)');
});

test.run();
