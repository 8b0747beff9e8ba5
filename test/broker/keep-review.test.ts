// Review of the broker's version 3 path (issue 29) against fakes: what must hold on every way out. A
// failing test here is an open finding of the review, not a broken test.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { serveConnection } from '../../src/broker/connection.ts';
import type { PeerAtAccept } from '../../src/broker/accept-gate.ts';
import type { KeptRequestDeps } from '../../src/broker/kept-request.ts';
import type { BrokerMessage } from '../../src/control/index.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { IoError } from '../../src/io/index.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, Role, encodeFrame } from '../../src/protocol/index.ts';
import { RawClient } from '../support/frame-client.ts';
import { CGROUP, fakeBroker, types } from './connection-fakes.ts';

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

test('REVIEW-5: an ATTACH whose worker channel has failed closes the peer\'s pidfd once (WorkerHandle.send took it), never a descriptor that reused its number', async () => {
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 3, maxVersion: 3 });
  native().sendmsg(clientFd, hello, 0, hello.length);
  const attach = encodeFrame({ type: 'attach', id: 0x1234, fromOffset: 0n, role: Role.OBSERVE, rows: 24, cols: 80 }, 3);
  native().sendmsg(clientFd, attach, 0, attach.length);
  const pidfd = native().pidfdOpen(process.pid);
  const peer: PeerAtAccept = { credentials: { pid: process.pid, uid: 1500, gid: 1500 }, pidfd, cgroup: CGROUP, startTicks: 1 };
  /** Files opened right after the failed send: the lowest free numbers, the pidfd's among them. */
  const reused: number[] = [];
  const worker = {
    child: { pid: 4242 },
    unit: 'opencode-pty-session-0000000000001234aaaa.service',
    // As WorkerHandle.send on a channel that failed: the descriptors are taken (closed), then it throws.
    send(_message: BrokerMessage, fds: number[] = []) {
      for (const fd of fds) closeQuietly(fd);
      // Anything else of the broker's may open a descriptor now (a bus reconnect, an accept): it gets the freed number.
      for (let i = 0; i < fds.length; i += 1) reused.push(openSync('/dev/null', 'r'));
      throw new IoError('CLOSED', 'socket is closed');
    },
  };
  const kept: KeptRequestDeps = {
    clientUid: 1500,
    isMainPid: async () => true,
    kept: { list: async () => [], find: () => ({ worker }) },
    log: () => undefined,
  };
  const broker = fakeBroker(undefined);
  const client = new RawClient(clientFd, 3);
  try {
    await serveConnection(new FdSocket(serverFd), peer, 'ordinary', Date.now(), { ...broker.deps, keptRequests: kept });
    await client.closed();
    assert.equal(types(client.frames), ['welcome', `error ${ErrorCode.INTERNAL}`]);
    assert.ok(reused.includes(pidfd), `the pidfd's number ${pidfd} was taken again by ${JSON.stringify(reused)}`);
    assert.ok(isOpen(pidfd), `descriptor ${pidfd} (another owner's by then) was closed a second time by the connection's cleanup`);
  } finally {
    client.close();
    for (const fd of reused) if (isOpen(fd)) closeSync(fd);
  }
});

test.run();
