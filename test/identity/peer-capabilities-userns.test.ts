// The operator's CAP_SYS_PTRACE (src/identity/peer-capabilities.ts) counts only in our own user namespace:
// a uid-0 process in a child namespace that maps 0 to 0 (unshare -U --map-root-user, systemd
// PrivateUsers=yes) shows every capability in /proc/PID/status, yet holds none over a session's program.
// Found by a second review of the kept sessions' fixes.
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/index.ts';
import { closeQuietly } from '../../src/io/index.ts';
import { CAP_SYS_PTRACE, effectiveCapabilities, pidfdHasCapability } from '../../src/identity/index.ts';
import { until } from '../support/wait.ts';

const userNamespace = (pid: number | 'self') => String(statSync(`/proc/${pid}/ns/user`).ino);

test('a root process in a child user namespace, with a full CapEff there, is not an operator; the same read in ours is', async () => {
  if (process.getuid?.() !== 0) return void console.log('skipped: needs root');
  const child = spawn('unshare', ['-U', '--map-root-user', 'sleep', '30'], { stdio: 'ignore' });
  const pidfd = native().pidfdOpen(child.pid!);
  try {
    // unshare(1) has entered its namespace once the process's ns link differs from ours.
    await until(() => userNamespace(child.pid!) !== userNamespace('self'), 5000, 'unshare in its own user namespace');
    await until(() => ((effectiveCapabilities(readFileSync(`/proc/${child.pid}/status`, 'utf8')) ?? 0n) & (1n << BigInt(CAP_SYS_PTRACE))) !== 0n, 5000, 'CAP_SYS_PTRACE in its CapEff, in its namespace');
    assert.not.ok(pidfdHasCapability(pidfd, CAP_SYS_PTRACE), 'CapEff of a namespaced root taken as CAP_SYS_PTRACE over ours');
    // The same process read as if it shared our namespace: the capability check alone would pass.
    assert.ok(pidfdHasCapability(pidfd, CAP_SYS_PTRACE, native(), undefined, () => 'one'));
  } finally {
    closeQuietly(pidfd);
    child.kill();
  }
});

// The supervisor runs with an empty capability bounding set (units/supervisor@.service): following
// /proc/PID/ns/user of a capable root takes ptrace access it lacks (EACCES), and a check built on it
// refused every operator, found by the kept sessions' integration suite.
test('a supervisor with no capabilities still sees a capable root of its own namespace as an operator', async () => {
  if (process.getuid?.() !== 0) return void console.log('skipped: needs root');
  const operator = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    const probe = `import { native } from ${JSON.stringify(new URL('../../src/native/index.ts', import.meta.url).pathname)};
      import { CAP_SYS_PTRACE, pidfdHasCapability } from ${JSON.stringify(new URL('../../src/identity/index.ts', import.meta.url).pathname)};
      const pidfd = native().pidfdOpen(${operator.pid});
      process.stdout.write(String(pidfdHasCapability(pidfd, CAP_SYS_PTRACE)));`;
    const argv = ['--bounding-set=-all', '--inh-caps=-all', '--', process.execPath, '--import', 'tsx', '--input-type=module', '-e', probe];
    const answer = await new Promise<string>((resolve, reject) => {
      const child = spawn('setpriv', argv, { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.on('error', reject);
      child.on('close', () => resolve(out));
    });
    assert.is(answer, 'true', 'root with CAP_SYS_PTRACE in our namespace, asked by a process with no capabilities');
  } finally {
    operator.kill();
  }
});

test.run();
