// Peer identity policy: the client service's live state, its one-second cache, cgroup membership.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { credentialsMatch, pidfdIdentity, processStartTicks, ticksSinceBoot } from '../../src/identity/peer-identity.ts';
import { serviceIsLive } from '../../src/identity/client-service.ts';
import { native } from '../../src/native/binding.ts';
import { closeSync, readFileSync } from 'node:fs';
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

test('start times: this process started before now', () => {
  const started = processStartTicks(process.pid);
  assert.ok(started > 0);
  assert.ok(started <= ticksSinceBoot());
});

test('pidfdIdentity: cgroup and start time of the live process behind a pidfd', () => {
  const pidfd = native().pidfdOpen(process.pid);
  try {
    const identity = pidfdIdentity(pidfd);
    assert.is(identity.pid, process.pid);
    assert.is(identity.startTicks, processStartTicks(process.pid));
    assert.is(`0::${identity.cgroup}`, readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((line) => line.startsWith('0::')));
  } finally {
    closeSync(pidfd);
  }
});

test.run();
