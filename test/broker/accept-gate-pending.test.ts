// MAX_PENDING_LOOKUPS bounds connections that wait on a client-service read. Peers refused without
// any read (a cgroup outside the unit) must not count, or one accept batch of them makes the agent's
// own next connection "busy".
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { AcceptGate, MAX_PENDING_LOOKUPS } from '../../src/broker/accept-gate.ts';
import { Admission } from '../../src/broker/admission.ts';
import type { ClientService } from '../../src/identity/client-service.ts';
import type { Config } from '../../src/config/schema.ts';
import { native } from '../../src/native/binding.ts';

test('one read in flight and 63 outside peers in one accept batch: the agent\'s next connection is not refused as busy', async () => {
  // Our own socketpairs: every peer is this process, of the configured account.
  const config = { requireClientUnit: true, client: { uid: process.getuid!(), gid: process.getgid!(), service: 'agent.service' } } as unknown as Config;
  let slow = true;
  // ClientService.containsProvisionally answers an outside cgroup without a read, from an async function: settled
  // only after the broker's synchronous accept loop (#acceptSome). A slow look stands for a D-Bus read.
  const service = {
    service: 'agent.service',
    // Peers made while `slow` stand for the agent's own processes (a cgroup that names its unit).
    plausible: () => slow,
    containsProvisionally: () => (slow ? new Promise(() => undefined) : Promise.resolve({ inside: false, confirmed: Promise.resolve({ inside: false }) })),
    isMainPid: () => Promise.resolve({ main: false }),
  } as unknown as ClientService;
  const gate = new AcceptGate({ config, admission: new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 120 }), service });
  const pairs = Array.from({ length: MAX_PENDING_LOOKUPS + 1 }, () => native().socketpair());
  void gate.decide(pairs[0]![0]);
  slow = false;
  const outside = pairs.slice(1, MAX_PENDING_LOOKUPS).map(([fd]) => gate.decide(fd));
  slow = true;
  const agent = gate.decide(pairs[MAX_PENDING_LOOKUPS]![0]);
  slow = false;
  await Promise.all(outside);
  const decided = await Promise.race([agent, new Promise<'waiting'>((resolve) => setTimeout(() => resolve('waiting'), 50))]);
  for (const [a, b] of pairs) {
    closeSync(a);
    closeSync(b);
  }
  // Waiting on its read is right; a refusal is not.
  if (decided !== 'waiting') assert.unreachable(`the agent was refused: ${(decided as { reason?: string }).reason}`);
});

test.run();
