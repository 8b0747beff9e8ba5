// One admitted connection's handshake (connection.ts) against fakes of the client service, the slots
// and the worker, over a real socketpair: what the client reads, and whether and when it is handed on,
// in the order of docs/architecture.md "The order of checks".
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readlinkSync } from 'node:fs';
import { serveConnection, type ConnectionDeps } from '../../src/broker/connection.ts';
import type { PeerAtAccept } from '../../src/broker/accept-gate.ts';
import type { ClientService, Look, ServiceSnapshot } from '../../src/identity/client-service.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, encodeFrame } from '../../src/protocol/index.ts';
import { deferred } from '../support/deferred.ts';
import { RawClient } from '../support/frame-client.ts';
import { CGROUP, SERVICE, connect, fakeBroker, types } from './connection-fakes.ts';

function snapshot(controlGroup: string): ServiceSnapshot {
  const state = { activeState: 'active', subState: 'running', mainPid: 7, controlGroup, invocationId: Buffer.alloc(16, 1) };
  return { state, error: undefined, readStartTicks: 2, readAt: 0 };
}

const inside = (controlGroup = CGROUP): Look => ({ inside: true, snapshot: snapshot(controlGroup) });
const outside: Look = { inside: false, snapshot: snapshot(CGROUP) };

/** A client service whose one answer (and its confirmation) the test decides. */
function service(answer: Look & { confirmed: Promise<Look> }): ConnectionDeps['clientService'] {
  return { service: SERVICE, containsProvisionally: async () => answer } satisfies Pick<ClientService, 'service' | 'containsProvisionally'>;
}

test('a provisional yes: WELCOME at once, no worker until the fresh look confirms, then the hand-off with its cgroup', async () => {
  const confirmation = deferred<Look>();
  const { deps, seen, handed } = fakeBroker(service({ ...inside('/old.slice/agent.service'), provisional: true, confirmed: confirmation.promise }));
  const { server, client, peer } = connect();
  try {
    const served = serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.frame('welcome');
    assert.is(seen.takes, 0, 'no worker is taken on a provisional yes');
    assert.is(seen.admissionReleased, 0, 'the admission slot is held until the look is confirmed');
    confirmation.resolve(inside());
    await served;
    await client.closed();
    assert.equal(types(client.frames), ['welcome']);
    assert.is(seen.takes, 1);
    assert.is(seen.adopted, 1);
    assert.is(handed.length, 1);
    assert.is(handed[0]!.peer.cgroup, CGROUP, 'the confirmed look\'s cgroup is handed on');
    assert.is(handed[0]!.version, 2);
    assert.equal([seen.admissionReleased, seen.slotsReleased], [1, 0], 'the session keeps its slot');
  } finally {
    client.close();
  }
});

test('a confirmed yes is final: the hand-off does not wait for `confirmed`', async () => {
  // A non-provisional look is its own confirmation; this fake's never settles, so any wait for it
  // would last until the client's deadline (HANDSHAKE_TIMEOUT, no hand-off).
  const { deps, seen, handed } = fakeBroker(service({ ...inside(), confirmed: new Promise<Look>(() => undefined) }));
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed();
    assert.equal(types(client.frames), ['welcome']);
    assert.is(handed.length, 1, 'handed off');
    assert.is(handed[0]!.peer.cgroup, CGROUP);
    assert.equal([seen.takes, seen.adopted, seen.admissionReleased, seen.slotsReleased], [1, 1, 1, 0]);
    assert.equal(seen.notes, []);
  } finally {
    client.close();
  }
});

test('a provisional yes the fresh look refuses: AUTHENTICATION after WELCOME, noted, no worker, both slots freed', async () => {
  const { deps, seen, handed } = fakeBroker(service({ ...inside(), provisional: true, confirmed: Promise.resolve(outside) }));
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed();
    assert.equal(types(client.frames), ['welcome', `error ${ErrorCode.AUTHENTICATION}`]);
    assert.equal([seen.takes, handed.length], [0, 0]);
    assert.match(seen.notes.join('\n'), /not inside agent\.service/);
    assert.equal([seen.admissionReleased, seen.slotsTaken, seen.slotsReleased], [1, 1, 1]);
  } finally {
    client.close();
  }
});

test('a confirmed no is refused before WELCOME and before a session slot', async () => {
  const { deps, seen } = fakeBroker(service({ ...outside, confirmed: Promise.resolve(outside) }));
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed();
    assert.equal(types(client.frames), [`error ${ErrorCode.AUTHENTICATION}`]);
    assert.equal([seen.slotsTaken, seen.takes, seen.admissionReleased], [0, 0, 1]);
    assert.match(seen.notes.join('\n'), /not inside agent\.service/);
  } finally {
    client.close();
  }
});

test('without a client unit to be inside, the hand-off carries no cgroup', async () => {
  const { deps, handed } = fakeBroker(undefined);
  const { server, client, peer } = connect();
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), deps);
    await client.closed();
    assert.equal(types(client.frames), ['welcome']);
    assert.is(handed.length, 1);
    assert.is(handed[0]!.peer.cgroup, null);
  } finally {
    client.close();
  }
});

test('a peer that shuts its writing side before HELLO is whole still reads why: ERROR PROTOCOL, then the close (docs/protocol.md, receiver checklist)', async () => {
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 2 });
  for (let at = 0; at < hello.length; at += 1) {
    const { deps, seen, handed } = fakeBroker(undefined);
    const [clientFd, serverFd] = native().socketpair();
    if (at > 0) native().sendmsg(clientFd, hello, 0, at);
    native().shutdown(clientFd, 'write');
    const client = new RawClient(clientFd, 1, { autoCredit: false });
    const peer: PeerAtAccept = { credentials: { pid: process.pid, uid: 1500, gid: 1500 }, pidfd: native().pidfdOpen(process.pid), cgroup: CGROUP, startTicks: 1 };
    try {
      await serveConnection(new FdSocket(serverFd), peer, 'ordinary', Date.now(), deps);
      await client.closed();
      assert.equal(client.frames, [{ type: 'error', code: ErrorCode.PROTOCOL, message: 'client closed during the handshake' }], `cut at ${at}`);
      assert.equal([seen.takes, handed.length], [0, 0], `cut at ${at}: no worker`);
    } finally {
      client.close();
    }
  }
});

test('a peer that sends HELLO and closes before WELCOME: no worker is taken for it, its slots are freed, nothing is left open', async () => {
  // Without a client unit there is no wait between HELLO and WELCOME: the peer is gone by then, so the
  // WELCOME send fails outright (EPIPE) and its queue is emptied, the error reported a tick later.
  const { deps, seen, handed } = fakeBroker(undefined);
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 2 });
  native().sendmsg(clientFd, hello, 0, hello.length);
  closeQuietly(clientFd);
  const server = new FdSocket(serverFd);
  const pidfd = native().pidfdOpen(process.pid);
  const peer: PeerAtAccept = { credentials: { pid: process.pid, uid: 1500, gid: 1500 }, pidfd, cgroup: CGROUP, startTicks: 1 };
  await serveConnection(server, peer, 'ordinary', Date.now(), deps);
  assert.equal([seen.takes, handed.length, seen.adopted], [0, 0, 0], 'no worker is taken for a peer that is gone');
  assert.equal([seen.slotsTaken, seen.slotsReleased, seen.admissionReleased], [1, 1, 1], 'both slots are freed');
  assert.match(seen.notes.join('\n'), /client closed during the handshake/, 'the peer\'s own doing, not the supervisor\'s');
  assert.ok(server.closed, 'the connection is closed');
  assert.not.ok(isPidfd(pidfd), 'the peer\'s pidfd is closed');
});

/** Whether descriptor `fd` of this process is (still) a pidfd. */
function isPidfd(fd: number): boolean {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[pidfd]';
  } catch {
    return false;
  }
}

test.run();
