// A provisional answer's confirmation is a promise its caller may drop: the accept gate never awaits
// it, and the handshake (broker/connection.ts) throws before awaiting it (SESSION_LIMIT, a failed
// WELCOME). It must then never reject unobserved, or Node 20 ends the broker
// (--unhandled-rejections=throw is the default).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ClientService } from '../../src/identity/client-service.ts';
import type { ServiceState } from '../../src/systemd/unit-manager.ts';

const live: ServiceState = {
  activeState: 'active',
  subState: 'running',
  mainPid: 7,
  controlGroup: '/system.slice/agent.service',
  invocationId: Buffer.alloc(16, 1),
};

test('a dropped confirmation whose read cannot even begin raises no unhandled rejection', async () => {
  let now = 0;
  let ticksFail = false;
  const service = new ClientService('agent.service', () => Promise.resolve(live), {
    ttlMs: 1000,
    now: () => now,
    // The clock is /proc/uptime: readFileSync fails with EMFILE when the broker is out of descriptors.
    ticks: () => {
      if (ticksFail) throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
      return 100;
    },
  });
  assert.ok((await service.contains('/system.slice/agent.service', 50)).inside);
  now = 1500;
  ticksFail = true;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    // What the accept gate does: use the provisional answer, drop `confirmed`.
    const look = await service.containsProvisionally('/system.slice/agent.service', 50);
    assert.ok(look.inside && look.provisional);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.equal(unhandled.map((reason) => (reason as Error).message), [], 'the broker would have exited');
});

test.run();
