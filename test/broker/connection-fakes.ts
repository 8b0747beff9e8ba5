// The broker's side of one connection, faked for connection.ts's suites (connection.test.ts,
// slot-wait.test.ts): the client service, the slots and the worker, over a real socketpair.
import type { ChildProcess } from 'node:child_process';
import { type ConnectionDeps, type HandOffWorker } from '../../src/broker/connection.ts';
import type { PeerAtAccept } from '../../src/broker/accept-gate.ts';
import type { PeerIdentity } from '../../src/identity/peer.ts';
import type { SessionSlots } from '../../src/broker/session-slots.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { encodeFrame, type Frame } from '../../src/protocol/index.ts';
import { RawClient as Client } from '../support/frame-client.ts';

export const SERVICE = 'agent.service';
export const CGROUP = `/system.slice/${SERVICE}`;

/** The broker's side, faked: what was noted, taken, released and handed on. `slots`: real session
 * slots to take from (else every take succeeds and is counted); `slotWaitMs` and `settleMs` as the
 * broker's (stoppingSessionBoundMs, STOP_IN_FLIGHT_MS). */
export function fakeBroker(clientService: ConnectionDeps['clientService'], handshakeTimeoutMs = 2000, slots?: SessionSlots, slotWaitMs = 2000, settleMs = 0) {
  const seen = { notes: [] as string[], takes: 0, slotsTaken: 0, slotsReleased: 0, admissionReleased: 0, refunds: 0, shutdowns: 0, adopted: 0 };
  const handed: { peer: PeerIdentity; version: number }[] = [];
  const worker: HandOffWorker = {
    child: { pid: 4242 } as ChildProcess,
    handOff(_id, clientFd, pidfd, peer, _deadlineMs, version) {
      // A real handle takes both descriptors whatever happens.
      closeQuietly(clientFd);
      closeQuietly(pidfd);
      handed.push({ peer, version });
    },
    shutdown: () => void (seen.shutdowns += 1),
  };
  const deps: ConnectionDeps<HandOffWorker> = {
    handshakeTimeoutMs,
    slotWaitMs,
    settleMs,
    clientService,
    cgroupOf: () => CGROUP,
    admission: { release: () => void (seen.admissionReleased += 1), refund: () => void (seen.refunds += 1) },
    slots: slots ?? {
      tryTake: () => ((seen.slotsTaken += 1), { finishing: () => undefined, release: () => void (seen.slotsReleased += 1) }),
      take: async () => undefined,
      max: 1,
      reserveOpen: false,
      tryTakeReserved: () => undefined,
    },
    refusals: { note: (_key, reason) => void seen.notes.push(reason) },
    takeWorker: async () => ((seen.takes += 1), worker),
    adopt: () => void (seen.adopted += 1),
    nextId: () => 1,
    log: () => undefined,
  };
  return { deps, seen, handed };
}

/** A connection whose client has sent HELLO (versions 1..2), admitted as this process. With `read`
 * false nobody reads the client's side (`clientFd`), which the test may close as a client that left. */
export function connect(read = true): { server: FdSocket; client: Client; clientFd: number; peer: PeerAtAccept } {
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 2 });
  native().sendmsg(clientFd, hello, 0, hello.length);
  const credentials = { pid: process.pid, uid: 1500, gid: 1500 };
  const peer: PeerAtAccept = { credentials, pidfd: native().pidfdOpen(process.pid), cgroup: CGROUP, startTicks: 1 };
  return { server: new FdSocket(serverFd), client: read ? new Client(clientFd) : (undefined as unknown as Client), clientFd, peer };
}

export const types = (frames: Frame[]) => frames.map((frame) => (frame.type === 'error' ? `error ${frame.code}` : frame.type));
