// The last close of a peer's connection over real socketpairs: what the peer queued (descriptors of
// every kind, a lingering TCP socket among them) is read away and closed, nothing leaks, nothing more
// can be queued; and SO_PASSRIGHTS, where the kernel has it, refuses descriptors at the sender.
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { closePeer, deferredDrains, drainPeer, refuseAndClose } from '../../src/io/peer-close.ts';
import { closeReceived } from '../../src/io/fds.ts';
import { passRights } from '../../src/io/pass-rights.ts';
import { leakedSince, openFds } from '../native/fd-helpers.ts';
import { lingeringSocket } from './lingering.ts';


test('queued messages with files, sockets and pipes: all read away and closed, and the peer can send no more', async () => {
  const before = openFds();
  const [a, b] = native().socketpair();
  const [s1, s2] = native().socketpair();
  const files = Array.from({ length: 253 }, () => openSync('/dev/null', 'r'));
  for (let i = 0; i < 20; i += 1) assert.is(native().sendmsg(a, Buffer.from('x'), 0, 1, files), 1);
  const stat = openSync('/proc/self/stat', 'r');
  assert.is(native().sendmsg(a, Buffer.from('y'), 0, 1, [s1, s2, stat]), 1);
  closeSync(stat);
  for (const fd of files) closeSync(fd);
  closeSync(s1);
  closeSync(s2);
  drainPeer(b);
  assert.throws(() => native().sendmsg(a, Buffer.from('z'), 0, 1), /EPIPE/);
  closeSync(a);
  closeSync(b);
  // The Unix sockets went to close threads (their close frees their own queues): let those return.
  while (native().pendingCloses() > 0) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(leakedSince(before), []);
});

test('refuseAndClose: the frame reaches the peer, what it queued (descriptors too) is read away and closed, and the descriptor with it', async () => {
  const before = openFds();
  const [a, b] = native().socketpair();
  const files = Array.from({ length: 8 }, () => openSync('/dev/null', 'r'));
  assert.is(native().sendmsg(a, Buffer.from('x'), 0, 1, files), 1);
  for (const fd of files) closeSync(fd);
  assert.is(refuseAndClose(b, Buffer.from('no')), true);
  const got = Buffer.alloc(8);
  assert.is(native().recvmsg(a, got, 0, 8, 0)?.bytes, 2);
  assert.throws(() => native().sendmsg(a, Buffer.from('z'), 0, 1), /EPIPE|ECONNRESET/);
  closeSync(a);
  while (native().pendingCloses() > 0) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(leakedSince(before), []);
});

test('without a device list the addon reads the mount table itself, only when a file arrives: a file on a mount we see is closed at once', () => {
  const [a, b] = native().socketpair();
  // Nothing queued: nothing to decide, no file read.
  assert.equal(native().drainPeer(b), { messages: 0, closed: 0, detached: 0, complete: true });
  closeAll([a, b]);
  const [c, d] = native().socketpair();
  const file = openSync('/proc/self/stat', 'r');
  assert.is(native().sendmsg(c, Buffer.from('x'), 0, 1, [file]), 1);
  // /proc is one of our mounts, and not FUSE: closed in this thread.
  assert.equal(native().drainPeer(d), { messages: 1, closed: 1, detached: 0, complete: true });
  // An empty list names no device: the same file is closed on a thread of its own.
  const [e, f] = native().socketpair();
  assert.is(native().sendmsg(e, Buffer.from('x'), 0, 1, [file]), 1);
  assert.equal(native().drainPeer(f, []), { messages: 1, closed: 0, detached: 1, complete: true });
  closeAll([c, d, e, f, file]);
});

test('a burst of copies of one Unix socket (253 a message): read away in one drain, one close-pool entry a message, nothing left open', async () => {
  const before = openFds();
  const [a, b] = native().socketpair(1 << 20);
  const [s1, s2] = native().socketpair();
  const copies = Array.from({ length: 253 }, () => s1);
  const MESSAGES = 40;
  for (let i = 0; i < MESSAGES; i += 1) assert.is(native().sendmsg(a, Buffer.from('x'), 0, 1, copies), 1);
  closeAll([s1, s2]);
  // A thread per descriptor outran its own ends and left the rest queued until the process exited.
  const drained = native().drainPeer(b);
  assert.equal(drained, { messages: MESSAGES, closed: MESSAGES * 252, detached: MESSAGES, complete: true });
  closeAll([a, b]);
  while (native().pendingCloses() > 0) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(native().closeThreads().threads <= native().closeThreads().max);
  assert.equal(leakedSince(before), []);
});

test('a queue of nothing but Unix sockets, more than the close pool holds long: every one is still closed', async () => {
  const before = openFds();
  // Each loaded socket queues 4 messages of 253 distinct Unix sockets: emptying them puts thousands on
  // the close pool's queue at once, all Unix sockets.
  const loaded: number[] = [];
  for (let i = 0; i < 12; i += 1) {
    const [x, y] = native().socketpair();
    for (let m = 0; m < 4; m += 1) {
      const inner: number[] = [];
      for (let j = 0; j < 253; j += 1) {
        const [p, q] = native().socketpair();
        closeSync(q);
        inner.push(p);
      }
      assert.is(native().sendmsg(x, Buffer.from('x'), 0, 1, inner), 1);
      closeAll(inner);
    }
    closeSync(x);
    loaded.push(y);
  }
  const [a, b] = native().socketpair();
  assert.is(native().sendmsg(a, Buffer.from('y'), 0, 1, loaded), 1);
  closeAll([...loaded, a]);
  assert.is(closePeer(b), true);
  // Before: a close thread asked whether the queue was long before reading, and put its socket back
  // unread; with more queued than the threads hold, every thread did so for good and none closed.
  const deadline = Date.now() + 20_000;
  while (native().pendingCloses() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.is(native().pendingCloses(), 0, JSON.stringify(native().closeThreads()));
  assert.equal(leakedSince(before), []);
});

test('a TCP socket goes to the close pool: a sender that kept a copy can arm its linger again after our recvmsg disarmed it', async () => {
  const [a, b] = native().socketpair();
  const tcp = await lingeringSocket();
  assert.is(native().sendmsg(a, Buffer.from('x'), 0, 1, [tcp.fd]), 1);
  closeSync(tcp.fd);
  // Before: closed here, at once, as any socket but a Unix one.
  assert.equal(native().drainPeer(b, []), { messages: 1, closed: 0, detached: 1, complete: true });
  closeAll([a, b]);
  while (native().pendingCloses() > 0) await new Promise((resolve) => setImmediate(resolve));
  tcp.stop();
});

test('closePeer closes at once when the drain is complete, and nothing is deferred', () => {
  const [a, b] = native().socketpair();
  assert.is(native().sendmsg(a, Buffer.from('x'), 0, 1, [a]), 1);
  assert.is(closePeer(b), true);
  assert.is(deferredDrains(), 0);
  assert.throws(() => native().statCached(b), /EBADF/);
  closeSync(a);
});

function lingeringChild(mode?: string): ReturnType<typeof spawnSync> {
  const script = fileURLToPath(new URL('./peer-close-child.ts', import.meta.url));
  return spawnSync(process.execPath, ['--import', 'tsx', script, ...(mode ? [mode] : [])], { encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
}

test('a lingering TCP socket queued on the connection: the last close returns, and no close thread lingers (in a child, killed if it hangs)', () => {
  const child = lingeringChild();
  assert.is(child.signal, null, `the close hung: ${child.stderr}`);
  assert.is(String(child.stdout).trim(), 'closed\nsettled', String(child.stderr));
});

test('a Unix socket queued on the connection with a lingering TCP socket queued on it: the last close returns, and no close thread lingers on it (in a child)', () => {
  const child = lingeringChild('nested');
  assert.is(child.signal, null, `the close hung: ${child.stderr}`);
  // Before: the close thread's close of the Unix socket freed its queue, and lingered on the TCP socket.
  assert.is(String(child.stdout).trim(), 'closed\nsettled', String(child.stderr));
});

test('a Unix socket queued after an O_PATH file on its own inode (the same device and inode, no socket), a lingering TCP socket on its queue: not taken for a copy and closed in the caller (in a child)', () => {
  const child = lingeringChild('alias');
  assert.is(child.signal, null, `the close hung: ${child.stderr}`);
  // Before: copies were told by inode, the socket was closed in the caller's thread, its last reference.
  assert.is(String(child.stdout).trim(), 'closed\nsettled', String(child.stderr));
});

test('a listening Unix socket queued on the connection, a pending connection on it holding a lingering TCP socket: no close thread lingers on it (in a child)', () => {
  const child = lingeringChild('listener');
  assert.is(child.signal, null, `the close hung: ${child.stderr}`);
  assert.is(String(child.stdout).trim(), 'closed\nsettled', String(child.stderr));
});

function oobChild(mode: string): ReturnType<typeof spawnSync> {
  const script = fileURLToPath(new URL('./oob-child.ts', import.meta.url));
  return spawnSync(process.execPath, ['--import', 'tsx', script, mode], { encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
}

for (const mode of ['read', 'drain']) {
  test(`a lingering TCP socket on the peer's MSG_OOB byte: a ${mode === 'read' ? 'stream read' : 'drain'} meets it and returns, no close thread lingers (in a child, killed if it hangs)`, () => {
    const child = oobChild(mode);
    // Before: read out of line, the byte was dropped in the reading thread with the socket on it.
    assert.is(child.signal, null, `the read hung: ${child.stderr}`);
    assert.is(String(child.stdout).trim(), 'returned\nsettled', String(child.stderr));
  });
}

test("a user's FUSE file root cannot stat (no allow_other): closed on a thread of its own, not in the caller's (in a child, killed if it hangs)", () => {
  if (!existsSync('/dev/fuse')) return; // no FUSE on this host: nothing such can be sent
  const build = mkdtempSync(join(tmpdir(), 'userfuse-build-'));
  let mountpoint: string | undefined;
  try {
    const binary = join(build, 'userfuse');
    execFileSync('cc', ['-O1', '-pthread', '-o', binary, fileURLToPath(new URL('../support/hang-fs.c', import.meta.url))]);
    const script = fileURLToPath(new URL('./user-fuse-child.ts', import.meta.url));
    // Ours to remove (below): the child's mount on it is seen only in its own namespace, which goes with it.
    mountpoint = mkdtempSync(join(tmpdir(), 'userfuse-'));
    // A mount namespace of its own: the mount is never seen outside, and goes with the child.
    const child = spawnSync('unshare', ['-m', '--propagation', 'private', process.execPath, '--import', 'tsx', script, binary, mountpoint], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
    assert.is(child.signal, null, `a close hung on the FLUSH: ${child.stderr}`);
    // Both were handed to a close thread (closeReceived's and drainPeer's): both calls returned while
    // the file system lived (its own end, after 20 s, would release a close held in the caller's thread).
    assert.equal(JSON.parse(child.stdout.trim()), { first: 1, drained: 1, alive: true }, child.stderr);
  } finally {
    rmSync(build, { recursive: true, force: true });
    if (mountpoint) rmdirSync(mountpoint);
  }
});

test('SO_PASSRIGHTS off: the sender of a descriptor gets EPERM and nothing is queued; on again: it passes', () => {
  const [a, b] = native().socketpair();
  const fd = openSync('/dev/null', 'r');
  if (!passRights(b, false)) {
    closeAll([a, b, fd]);
    return; // a kernel before 6.16: nothing to refuse with
  }
  assert.throws(() => native().sendmsg(a, Buffer.from('x'), 0, 1, [fd]), /EPERM/);
  assert.is(native().recvmsg(b, Buffer.alloc(4), 0, 4, 1), null);
  assert.ok(passRights(b, true));
  assert.is(native().sendmsg(a, Buffer.from('x'), 0, 1, [fd]), 1);
  const got = native().recvmsg(b, Buffer.alloc(4), 0, 4, 1)!;
  assert.is(got.fds.length, 1);
  closeAll([a, b, fd, ...got.fds]);
});

function closeAll(fds: number[]): void {
  for (const fd of fds) closeSync(fd);
}

test('closeReceived of more descriptors than one message holds (a read that gathered several): every one closed, nothing left open', () => {
  const before = openFds();
  const files = Array.from({ length: 300 }, () => openSync('/dev/null', 'r'));
  closeReceived(files);
  assert.equal(leakedSince(before), []);
});

test('closePeer on a descriptor already closed does not throw', () => {
  const [a, b] = native().socketpair();
  closeSync(b);
  closePeer(b);
  closeSync(a);
});

test.run();
