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

test.run();
