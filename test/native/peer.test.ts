// Tests for peer identity: SO_PEERCRED, SO_PEERPIDFD, pidfd pid/cgroup/signal, against real sockets and a child process.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../../src/native/binding.ts';
import { closeAll, fdFlags, O_CLOEXEC, tempDir, waitForOutput } from './fd-helpers.ts';

const addon = native();

function cgroupLine(pid: number | 'self'): string {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'));
  if (line === undefined) throw new Error('no cgroup v2 line');
  return line.slice(3);
}

const isErrno = (code: string) => (e: NodeJS.ErrnoException) => e.code === code;

test('peerCredentials of a socketpair is our own pid, uid, gid', () => {
  const [a, b] = addon.socketpair();
  try {
    assert.equal(addon.peerCredentials(a), { pid: process.pid, uid: process.getuid!(), gid: process.getgid!() });
    assert.equal(addon.peerCredentials(b), { pid: process.pid, uid: process.getuid!(), gid: process.getgid!() });
  } finally {
    closeAll([a, b]);
  }
});

test('listenUnix / connectUnix / accept: both ends see our credentials; fds are non-blocking and close-on-exec', () => {
  const dir = tempDir();
  const path = join(dir.path, 'listen.sock');
  const listener = addon.listenUnix(path, 8);
  const fds = [listener];
  try {
    assert.is(addon.accept(listener), -1);
    const client = addon.connectUnix(path);
    fds.push(client);
    const server = addon.accept(listener);
    assert.ok(server >= 0);
    fds.push(server);
    const self = { pid: process.pid, uid: process.getuid!(), gid: process.getgid!() };
    assert.equal(addon.peerCredentials(server), self);
    assert.equal(addon.peerCredentials(client), self);
    for (const fd of [listener, client, server]) {
      assert.is(fdFlags(fd) & O_CLOEXEC, O_CLOEXEC);
      assert.is(fdFlags(fd) & 0o4000, 0o4000);
    }
  } finally {
    closeAll(fds);
    dir.remove();
  }
});

test('pidfdOpen of ourselves: pidfdPid is our pid, pidfdCgroup our cgroup, signal 0 succeeds', () => {
  const pidfd = addon.pidfdOpen(process.pid);
  try {
    assert.is(fdFlags(pidfd) & O_CLOEXEC, O_CLOEXEC);
    assert.is(addon.pidfdPid(pidfd), process.pid);
    assert.is(addon.pidfdCgroup(pidfd), cgroupLine('self'));
    addon.pidfdSendSignal(pidfd, 0);
  } finally {
    closeAll([pidfd]);
  }
});

test('peerPidfd names the connecting child; after it exits pidfdPid and pidfdCgroup throw ESRCH', async () => {
  const dir = tempDir();
  const path = join(dir.path, 'peer.sock');
  const listener = addon.listenUnix(path, 8);
  const fds = [listener];
  // The child connects, says so, and exits when we close our end.
  const child = spawn(
    process.execPath,
    ['-e', `const s = require('net').connect(process.argv[1], () => console.log('connected'));
            s.on('end', () => process.exit(0)); s.resume();`, path],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await waitForOutput(child.stdout!, 'connected');
    // A Unix connect returns once the connection is queued, so it is there to accept.
    const server = addon.accept(listener);
    assert.ok(server >= 0);
    fds.push(server);
    assert.is(addon.peerCredentials(server).pid, child.pid);
    const pidfd = addon.peerPidfd(server);
    fds.push(pidfd);
    assert.is(fdFlags(pidfd) & O_CLOEXEC, O_CLOEXEC);
    assert.is(addon.pidfdPid(pidfd), child.pid);
    assert.is(addon.pidfdCgroup(pidfd), cgroupLine(child.pid!));

    const exited = once(child, 'exit');
    // Close the connection (the child then exits), keep the pidfd.
    fds.splice(fds.indexOf(server), 1);
    closeAll([server]);
    const [code] = await exited;
    assert.is(code, 0);
    // Node has reaped the child before 'exit': the pidfd now names no process.
    assert.throws(() => addon.pidfdPid(pidfd), isErrno('ESRCH'));
    assert.throws(() => addon.pidfdCgroup(pidfd), isErrno('ESRCH'));
    assert.throws(() => addon.pidfdSendSignal(pidfd, 0), isErrno('ESRCH'));
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    closeAll(fds);
    dir.remove();
  }
});

test('pidfdSendSignal delivers the signal to exactly that process', async () => {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30); console.log("up")'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await waitForOutput(child.stdout!, 'up');
  const pidfd = addon.pidfdOpen(child.pid!);
  try {
    const exited = once(child, 'exit');
    addon.pidfdSendSignal(pidfd, 15);
    const [code, signal] = await exited;
    assert.is(code, null);
    assert.is(signal, 'SIGTERM');
  } finally {
    closeAll([pidfd]);
  }
});

test('pidfd functions on a non-pidfd or closed fd throw, never return a pid', () => {
  const [a, b] = addon.socketpair();
  closeAll([b]);
  try {
    assert.throws(() => addon.pidfdPid(a), isErrno('EINVAL'));
    assert.throws(() => addon.pidfdCgroup(a), isErrno('EINVAL'));
    assert.throws(() => addon.pidfdSendSignal(a, 0), isErrno('EBADF'));
    assert.throws(() => addon.pidfdPid(b), isErrno('EBADF'));
    assert.throws(() => addon.peerPidfd(b), isErrno('EBADF'));
    assert.throws(() => addon.peerCredentials(b), isErrno('EBADF'));
  } finally {
    closeAll([a]);
  }
});

test('pidfdOpen of a pid that does not exist throws ESRCH', () => {
  // pid_max is at most 2^22 on Linux, so this pid cannot exist.
  assert.throws(() => addon.pidfdOpen(2 ** 22 + 1), isErrno('ESRCH'));
});

test.run();
