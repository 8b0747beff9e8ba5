// Peer identity policy: the client service's live state, its one-second cache, cgroup membership.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ClientServiceCache, credentialsMatch, processStartTicks, serviceIsLive, ticksSinceBoot } from '../../src/identity/peer-identity.ts';
import { cgroupWithin } from '../../src/identity/peer-recheck.ts';
import type { Config } from '../../src/config/schema.ts';
import type { ServiceState } from '../../src/systemd/unit-manager.ts';

const live: ServiceState = {
  activeState: 'active',
  subState: 'running',
  mainPid: 42,
  controlGroup: '/system.slice/agent.service',
  invocationId: Buffer.alloc(16, 1),
};

test('only an active, running instance with its own cgroup and a 16-byte invocation counts', () => {
  assert.ok(serviceIsLive(live, 'agent.service'));
  assert.not.ok(serviceIsLive({ ...live, activeState: 'activating' }, 'agent.service'));
  assert.not.ok(serviceIsLive({ ...live, subState: 'start' }, 'agent.service'));
  assert.not.ok(serviceIsLive({ ...live, controlGroup: '/system.slice/other.service' }, 'agent.service'));
  assert.not.ok(serviceIsLive({ ...live, controlGroup: '' }, 'agent.service'));
  assert.not.ok(serviceIsLive({ ...live, invocationId: Buffer.alloc(0) }, 'agent.service'));
});

test('cgroup membership is the unit group or below it, never a sibling with the same prefix', () => {
  assert.ok(cgroupWithin('/system.slice/agent.service', '/system.slice/agent.service'));
  assert.ok(cgroupWithin('/system.slice/agent.service/worker', '/system.slice/agent.service'));
  assert.not.ok(cgroupWithin('/system.slice/agent.service-evil', '/system.slice/agent.service'));
  assert.not.ok(cgroupWithin('/system.slice', '/system.slice/agent.service'));
});

test('credentials must equal the configured uid and gid exactly', () => {
  const config = { client: { uid: 1000, gid: 1001 } } as Config;
  assert.ok(credentialsMatch({ pid: 1, uid: 1000, gid: 1001 }, config));
  assert.not.ok(credentialsMatch({ pid: 1, uid: 1000, gid: 1000 }, config));
  assert.not.ok(credentialsMatch({ pid: 1, uid: 0, gid: 1001 }, config));
});

test('the service state is read at most once a second, and concurrent callers share one read', async () => {
  let reads = 0;
  let release: () => void = () => undefined;
  const cache = new ClientServiceCache(async () => {
    reads += 1;
    await new Promise<void>((resolve) => (release = resolve));
    return live;
  });
  const pending = [cache.state(0), cache.state(0), cache.state(0)];
  release();
  const states = await Promise.all(pending);
  assert.is(reads, 1);
  assert.ok(states.every((state) => state === live));
  assert.is(await cache.state(Date.now()), live);
  assert.is(reads, 1);
  const later = cache.state(Date.now() + 1000);
  release();
  await later;
  assert.is(reads, 2);
});

test('a failed read counts as no live service', async () => {
  const cache = new ClientServiceCache(() => Promise.reject(new Error('no such unit')));
  assert.is(await cache.state(), undefined);
});

test('start times: this process started before now', () => {
  const started = processStartTicks(process.pid);
  assert.ok(started > 0);
  assert.ok(started <= ticksSinceBoot());
});

test.run();
