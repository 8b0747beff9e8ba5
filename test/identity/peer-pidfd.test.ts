// The peer's pidfd, through SO_PEERPIDFD and through the fallback forced as on a kernel without it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { peerPidfd, processStartTicks, ticksSinceBoot, type PidfdBinding } from '../../src/identity/peer-identity.ts';
import { openFdCount } from '../support/fds.ts';

/** The addon as on Linux < 6.5: SO_PEERPIDFD is unknown. */
const oldKernel: PidfdBinding = {
  peerPidfd: () => {
    throw Object.assign(new Error('getsockopt SO_PEERPIDFD: protocol not available'), { code: 'ENOPROTOOPT' });
  },
  pidfdOpen: (pid) => native().pidfdOpen(pid),
  pidfdPid: (pidfd) => native().pidfdPid(pidfd),
};

function code(run: () => unknown): string | undefined {
  try {
    closeSync(run() as number);
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

test('SO_PEERPIDFD names the peer on this kernel', () => {
  const [a, b] = native().socketpair();
  const pidfd = peerPidfd(a, process.pid, ticksSinceBoot());
  assert.is(native().pidfdPid(pidfd), process.pid);
  for (const fd of [pidfd, a, b]) closeSync(fd);
});

test('the forced fallback: a process that started by accept passes, and the pidfd names it', () => {
  const [a, b] = native().socketpair();
  const pidfd = peerPidfd(a, process.pid, ticksSinceBoot(), oldKernel);
  assert.is(native().pidfdPid(pidfd), process.pid);
  for (const fd of [pidfd, a, b]) closeSync(fd);
});

test('the accept time as a function: read by the fallback alone, and judged as the number would be', () => {
  const [a, b] = native().socketpair();
  let reads = 0;
  const clock = () => (reads += 1, ticksSinceBoot());
  closeSync(peerPidfd(a, process.pid, clock));
  assert.is(reads, 0, 'SO_PEERPIDFD needs no clock');
  closeSync(peerPidfd(a, process.pid, clock, oldKernel));
  assert.is(reads, 1);
  assert.is(code(() => peerPidfd(a, process.pid, () => processStartTicks(process.pid) - 1, oldKernel)), 'ESRCH');
  for (const fd of [a, b]) closeSync(fd);
});

test('SO_PEERPIDFD failing with EINVAL (a peer gone, on Linux 6.5 to 6.14) is a peer gone (ESRCH)', () => {
  const [a, b] = native().socketpair();
  const einval = Object.assign(new Error('getsockopt SO_PEERPIDFD: invalid argument'), { code: 'EINVAL' });
  const gone: PidfdBinding = {
    ...oldKernel,
    peerPidfd: () => {
      throw einval;
    },
  };
  assert.is(code(() => peerPidfd(a, process.pid, ticksSinceBoot(), gone)), 'ESRCH');
  try {
    peerPidfd(a, process.pid, ticksSinceBoot(), gone);
  } catch (error) {
    assert.is((error as Error).cause, einval, 'the kernel\'s own error stays its cause');
  }
  for (const fd of [a, b]) closeSync(fd);
});

test('the forced fallback: a peer whose /proc entry is gone by the check is gone (ESRCH), not a fault of ours', () => {
  const [a, b] = native().socketpair();
  // A PID already reaped: its pidfd stands in as ours (opened just before it went), its /proc entry is gone.
  const gone = spawnSync('true').pid!;
  const racing: PidfdBinding = { ...oldKernel, pidfdOpen: () => native().pidfdOpen(process.pid) };
  assert.is(code(() => peerPidfd(a, gone, ticksSinceBoot(), racing)), 'ESRCH');
  for (const fd of [a, b]) closeSync(fd);
});

test('the forced fallback: a process younger than the accept is taken for a reused PID', () => {
  const [a, b] = native().socketpair();
  // "Accepted" one tick before this process started: as if the PID had been reused since.
  const before = processStartTicks(process.pid) - 1;
  assert.is(code(() => peerPidfd(a, process.pid, before, oldKernel)), 'ESRCH');
  for (const fd of [a, b]) closeSync(fd);
});

test('the forced fallback: a peer that has exited is ESRCH, and no pidfd is left open', () => {
  const gone = spawnSync('true').pid!;
  const [a, b] = native().socketpair();
  const fds = openFdCount;
  const before = fds();
  assert.is(code(() => peerPidfd(a, gone, ticksSinceBoot(), oldKernel)), 'ESRCH');
  assert.is(fds(), before);
  for (const fd of [a, b]) closeSync(fd);
});

test('errors other than ENOPROTOOPT are not papered over by the fallback', () => {
  const broken: PidfdBinding = {
    ...oldKernel,
    peerPidfd: () => {
      throw Object.assign(new Error('bad fd'), { code: 'EBADF' });
    },
  };
  assert.is(code(() => peerPidfd(-1, process.pid, ticksSinceBoot(), broken)), 'EBADF');
});

test.run();
