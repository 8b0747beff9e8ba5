// Version 3's order at the broker (connection.ts, kept-request.ts) against fakes, over a real
// socketpair: WELCOME without a slot; START takes one and goes to a worker; LIST, ATTACH and
// STOP_SESSION are read whole, checked against the principals and answered or routed by id.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { serveConnection } from '../../src/broker/connection.ts';
import type { PeerAtAccept } from '../../src/broker/accept-gate.ts';
import { mainPidLook, type KeptRequestDeps } from '../../src/broker/kept-request.ts';
import type { KeptScope } from '../../src/broker/kept-sessions.ts';
import type { BrokerMessage } from '../../src/control/index.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { IoError } from '../../src/io/index.ts';
import { CAP_SYS_PTRACE, effectiveCapabilities, pidfdHasCapability } from '../../src/identity/index.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, Limits, Role, SessionError, SessionState, encodeFrame, type Frame, type SessionEntry } from '../../src/protocol/index.ts';
import { RawClient } from '../support/frame-client.ts';
import type { EndedRecord } from '../../src/kept-store/index.ts';
import { CGROUP, fakeBroker, types } from './connection-fakes.ts';

const entry: SessionEntry = {
  id: 0x1234, state: SessionState.DETACHED, controllers: 0, observers: 0, rows: 24, cols: 80, programPid: 70, mainPid: 69,
  startedAtMs: 1_700_000_000_000, keepMs: 60_000, deadlineMs: 1_700_000_060_000, oldest: 0n, next: 42n, fresh: true,
  endCode: 0, endStatus: 0, origin: 1, label: 'build', program: 'make', cwd: '/src',
};

/** A session whose unit ended with nobody attached: root answers from the end it kept (kept-ended.ts). */
const ENDED_UNIT = 'opencode-pty-session-00000000056780123456789abcdef012.service';
const ended: EndedRecord = {
  format: 1,
  session: { format: 1, unit: ENDED_UNIT, sessionId: 0x5678, keepMs: 60_000, retainBytes: 4096, label: 'gone', program: 'sh', cwd: '/', startedAtMs: 1_700_000_000_000, rows: 24, cols: 80, programPid: 72, mainPid: 71, origin: 1, service: 'agent.service', detachedSinceMs: 1_700_000_001_000 },
  end: { code: 2, status: 15, result: 'timeout', accounting: { cpuUsageNsec: 5, memoryBytes: null, ioReadBytes: null, ioWriteBytes: null, tasks: null, inputBytes: null, outputBytes: null, durationUsec: null } },
  next: '4',
  generation: 1,
  endedAtMs: 1_700_000_002_000,
  untilMs: 1_700_000_061_000,
};

function kept(options: { mainPid?: boolean; ptrace?: boolean; listed?: SessionEntry[]; endedUnderLive?: boolean } = {}) {
  const sent: { message: BrokerMessage; fds: number }[] = [];
  const logs: string[] = [];
  const worker = {
    child: { pid: 4242 },
    unit: 'opencode-pty-session-0000000000001234aaaa.service',
    send(message: BrokerMessage, fds: number[] = []) {
      sent.push({ message, fds: fds.length });
      for (const fd of fds) closeQuietly(fd);
    },
  };
  const scopes: KeptScope[] = [];
  const taken: number[] = [];
  const deps: KeptRequestDeps = {
    clientUid: 1500,
    service: 'agent.service',
    isMainPid: async () => options.mainPid ?? true,
    kept: {
      list: async (scope) => (scopes.push(scope), options.listed ?? [entry]),
      find: (id, scope) => (scopes.push(scope), id === entry.id ? { worker } : { code: ErrorCode.NO_SESSION, message: `no kept session ${id}` }),
      // Within the principal's scope alone, as KeptEnds.take.
      takeEnded: (id, scope) => {
        taken.push(id);
        const held = id === ended.session.sessionId || (options.endedUnderLive && id === entry.id);
        return held && (scope.sees === 'every' || scope.service === ended.session.service) ? ended : undefined;
      },
    },
    log: (_level, message) => void logs.push(message),
    ...(options.ptrace === undefined ? {} : { hasPtrace: () => options.ptrace! }),
  };
  return { deps, sent, logs, scopes, taken };
}

/** A version 3 connection whose client sent HELLO 1..3 and then `request` (with `fd` riding on it). */
function connect3(request: Frame, uid = 1500, fd?: number): { server: FdSocket; client: RawClient; peer: PeerAtAccept } {
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 1, maxVersion: 3 });
  native().sendmsg(clientFd, hello, 0, hello.length);
  const bytes = encodeFrame(request, 3);
  native().sendmsg(clientFd, bytes, 0, bytes.length, fd === undefined ? undefined : [fd]);
  const peer: PeerAtAccept = { credentials: { pid: process.pid, uid, gid: uid }, pidfd: native().pidfdOpen(process.pid), cgroup: CGROUP, startTicks: 1 };
  return { server: new FdSocket(serverFd), client: new RawClient(clientFd, 3), peer };
}

async function serve(request: Frame, options: { uid?: number; mainPid?: boolean; ptrace?: boolean; fd?: number; listed?: SessionEntry[]; endedUnderLive?: boolean } = {}) {
  const broker = fakeBroker(undefined);
  const keptDeps = kept(options);
  const { server, client, peer } = connect3(request, options.uid, options.fd);
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), { ...broker.deps, keptRequests: keptDeps.deps });
    await client.closed();
    return { frames: client.frames, seen: broker.seen, handed: broker.handed, ...keptDeps };
  } finally {
    client.close();
  }
}

test('LIST from the MainPID: WELCOME, SESSIONS, closed; no session slot, no worker', async () => {
  const { frames, seen } = await serve({ type: 'list' });
  assert.equal(types(frames), ['welcome', 'sessions']);
  assert.equal((frames[1] as Extract<Frame, { type: 'sessions' }>).sessions, [entry]);
  assert.equal([seen.slotsTaken, seen.takes, seen.admissionReleased], [0, 0, 1]);
});

test('LIST, ATTACH and STOP_SESSION from another process of the unit: NOT_PERMITTED, nothing routed', async () => {
  for (const request of [{ type: 'list' }, { type: 'attach', id: entry.id, fromOffset: 0n, role: Role.OBSERVE, rows: 24, cols: 80 }, { type: 'stop-session', id: entry.id }] as Frame[]) {
    const { frames, sent, seen } = await serve(request, { mainPid: false });
    assert.equal(types(frames), ['welcome', `error ${ErrorCode.NOT_PERMITTED}`], request.type);
    assert.is(sent.length, 0);
    assert.is(seen.slotsTaken, 0);
  }
});

test('ATTACH is routed to the worker of its id with the connection and the pidfd, journaled; an unknown id is NO_SESSION', async () => {
  const attach = await serve({ type: 'attach', id: entry.id, fromOffset: Limits.FROM_NOW, role: Role.CONTROL, rows: 30, cols: 100 });
  assert.equal(types(attach.frames), ['welcome'], 'the worker answers from here on');
  assert.equal(attach.sent, [{ message: { type: 'attach', role: 'control', fromOffset: '18446744073709551615', rows: 30, cols: 100, peer: { pid: process.pid, uid: 1500, principal: 'main-pid' } }, fds: 2 }]);
  assert.ok(attach.logs.some((line) => line.includes(`kept session ${entry.id}`) && line.includes('main-pid')), 'one journal line per ATTACH');
  assert.equal([attach.seen.slotsTaken, attach.seen.takes], [0, 0], 'an ATTACH takes no session slot');
  const unknown = await serve({ type: 'attach', id: 99, fromOffset: 0n, role: Role.CONTROL, rows: 30, cols: 100 });
  assert.equal(types(unknown.frames), ['welcome', `error ${ErrorCode.NO_SESSION}`]);
  const stop = await serve({ type: 'stop-session', id: entry.id });
  assert.equal(stop.sent.map((one) => one.message.type), ['stop-session']);
});

test('a session whose end root kept: ATTACH gets ATTACHED, TRUNCATED for the bytes gone with the helper, then EXIT; STOP_SESSION gets STOPPED with that end; nothing routed, journaled', async () => {
  const attach = await serve({ type: 'attach', id: ended.session.sessionId, fromOffset: 0n, role: Role.CONTROL, rows: 30, cols: 100 });
  assert.equal(types(attach.frames), ['welcome', 'attached', 'truncated', 'exit']);
  assert.equal(attach.frames[1], { type: 'attached', id: 0x5678, role: Role.CONTROL, generation: 2, oldest: 4n, next: 4n, programPid: 72, mainPid: 71, unit: ENDED_UNIT });
  assert.equal(attach.frames[3], { type: 'exit', ...ended.end });
  assert.equal(attach.sent, [], 'no worker holds it');
  assert.ok(attach.logs.some((line) => line.includes('ATTACH of kept session 22136, ended (timeout)')), attach.logs.join('\n'));
  const stop = await serve({ type: 'stop-session', id: ended.session.sessionId });
  assert.equal(types(stop.frames), ['welcome', 'stopped']);
  assert.equal(stop.frames[1], { type: 'stopped', end: ended.end });
  assert.equal(stop.sent, []);
});

test('a live session is looked up before an end held under its id: ATTACH and STOP_SESSION go to its worker, the end is not taken', async () => {
  for (const request of [{ type: 'attach', id: entry.id, fromOffset: 0n, role: Role.CONTROL, rows: 24, cols: 80 }, { type: 'stop-session', id: entry.id }] as Frame[]) {
    const { frames, sent, taken } = await serve(request, { endedUnderLive: true });
    assert.equal(types(frames), ['welcome'], request.type);
    assert.equal(sent.map((one) => one.message.type), [request.type]);
    assert.equal(taken, [], 'the end is not asked for');
  }
});

test('LIST leaves out an entry it cannot encode (a label with a control character), says so, and answers the rest', async () => {
  const { frames, logs } = await serve({ type: 'list' }, { listed: [{ ...entry, id: 77, label: 'a\u0001b' }, entry] });
  assert.equal(types(frames), ['welcome', 'sessions']);
  assert.equal((frames[1] as Extract<Frame, { type: 'sessions' }>).sessions, [entry]);
  assert.ok(logs.some((line) => /LIST leaves out kept session 77: label holds a control character/.test(line)), logs.join('\n'));
});

test('the MainPID\'s LIST, ATTACH and STOP_SESSION give their admission\'s rate token back; a refused child\'s LIST does not', async () => {
  for (const request of [{ type: 'list' }, { type: 'attach', id: entry.id, fromOffset: 0n, role: Role.OBSERVE, rows: 24, cols: 80 }, { type: 'stop-session', id: entry.id }] as Frame[]) {
    assert.is((await serve(request)).seen.refunds, 1, request.type);
  }
  assert.is((await serve({ type: 'list' }, { mainPid: false })).seen.refunds, 0);
});

test('the MainPID look that fails (the bus does not answer) is INTERNAL, which the agent may retry, not NOT_PERMITTED', async () => {
  const snapshot = (error?: Error) => ({ state: undefined, error, readStartTicks: 0, readAt: 0 });
  const failing = mainPidLook({ isMainPidNow: async () => ({ main: false, snapshot: snapshot(new Error('bus gone')) }) });
  await failing(42).then(
    () => assert.unreachable('a failed look answered'),
    (error: unknown) => {
      assert.instance(error, SessionError);
      assert.is((error as SessionError).wireCode, ErrorCode.INTERNAL);
      assert.match((error as Error).message, /bus gone/);
    },
  );
  assert.is(await mainPidLook({ isMainPidNow: async () => ({ main: true, snapshot: snapshot() }) })(42), true);
  assert.is(await mainPidLook(undefined)(42), false);
  // Through the connection: the agent reads INTERNAL.
  const broker = fakeBroker(undefined);
  const keptDeps = kept();
  const { server, client, peer } = connect3({ type: 'list' });
  try {
    await serveConnection(server, peer, 'ordinary', Date.now(), { ...broker.deps, keptRequests: { ...keptDeps.deps, isMainPid: failing } });
    await client.closed();
    assert.equal(types(client.frames), ['welcome', `error ${ErrorCode.INTERNAL}`]);
  } finally {
    client.close();
  }
});

test('each principal reaches what it sees: the MainPID its service\'s sessions, root every one', async () => {
  const agent = await serve({ type: 'list' });
  assert.equal(agent.scopes, [{ sees: 'service', service: 'agent.service' }]);
  const attach = await serve({ type: 'attach', id: entry.id, fromOffset: 0n, role: Role.OBSERVE, rows: 24, cols: 80 });
  assert.equal(attach.scopes, [{ sees: 'service', service: 'agent.service' }]);
  const root = await serve({ type: 'list' }, { uid: 0 });
  assert.equal(root.scopes, [{ sees: 'every' }]);
});

test('root: LIST and ATTACH of any session without the MainPID look; START refused NOT_PERMITTED', async () => {
  const list = await serve({ type: 'list' }, { uid: 0, mainPid: false });
  assert.equal(types(list.frames), ['welcome', 'sessions']);
  const attach = await serve({ type: 'attach', id: entry.id, fromOffset: 0n, role: Role.OBSERVE, rows: 24, cols: 80 }, { uid: 0, mainPid: false });
  assert.equal((attach.sent[0]!.message as { peer: unknown }).peer, { pid: process.pid, uid: 0, principal: 'root' });
  const dir = openSync('/', 'r');
  const start = await serve({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], keepMs: 0, retainBytes: 0, label: '' }, { uid: 0, fd: dir });
  closeSync(dir);
  assert.equal(types(start.frames), ['welcome', `error ${ErrorCode.NOT_PERMITTED}`]);
  assert.is(start.seen.slotsTaken, 0);
});

test('a uid-0 peer without CAP_SYS_PTRACE is no operator: LIST, ATTACH and STOP_SESSION are NOT_PERMITTED, saying why, and nothing is routed', async () => {
  for (const request of [{ type: 'list' }, { type: 'attach', id: entry.id, fromOffset: 0n, role: Role.OBSERVE, rows: 24, cols: 80 }, { type: 'stop-session', id: entry.id }] as Frame[]) {
    const refused = await serve(request, { uid: 0, ptrace: false });
    assert.equal(types(refused.frames), ['welcome', `error ${ErrorCode.NOT_PERMITTED}`], request.type);
    assert.match((refused.frames[1] as Extract<Frame, { type: 'error' }>).message, /CAP_SYS_PTRACE/);
    assert.equal(refused.sent, []);
  }
});

test('the capability is read from the process the pidfd names: this one (root, every capability) holds CAP_SYS_PTRACE; a CapEff without it, or an exited process, does not', () => {
  const pidfd = native().pidfdOpen(process.pid);
  try {
    assert.ok(pidfdHasCapability(pidfd, CAP_SYS_PTRACE));
    assert.not.ok(pidfdHasCapability(pidfd, CAP_SYS_PTRACE, native(), () => 'Name:\tx\nCapEff:\t0000000000000000\n'));
    assert.ok(pidfdHasCapability(pidfd, CAP_SYS_PTRACE, native(), () => 'CapEff:\t0000000000080000\n'));
    assert.not.ok(pidfdHasCapability(pidfd, CAP_SYS_PTRACE, { pidfdPid: () => -1 }));
  } finally {
    closeQuietly(pidfd);
  }
  assert.is(effectiveCapabilities('CapInh:\t0\nCapEff:\t000001ffffffffff\n'), 0x1ffffffffffn);
  assert.is(effectiveCapabilities('no such line'), undefined);
});

test('START in version 3 takes its slot after WELCOME and goes to a worker with its descriptor still queued', async () => {
  const dir = openSync('/', 'r');
  const start = await serve({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], keepMs: 1000, retainBytes: 0, label: 'x' }, { fd: dir });
  closeSync(dir);
  assert.equal(types(start.frames), ['welcome']);
  assert.equal([start.seen.slotsTaken, start.seen.takes, start.seen.adopted], [1, 1, 1]);
  assert.equal(start.handed.map((one) => one.version), [3]);
});

test('a descriptor riding on LIST is PROTOCOL, and closed', async () => {
  const dir = openSync('/', 'r');
  const list = await serve({ type: 'list' }, { fd: dir });
  closeSync(dir);
  assert.equal(types(list.frames), ['welcome', `error ${ErrorCode.PROTOCOL}`]);
});

/** A version 3 connection whose request is these raw bytes (a hostile client's). */
async function serveRaw(bytes: Buffer, handshakeTimeoutMs = 2000) {
  const broker = fakeBroker(undefined, handshakeTimeoutMs);
  const keptDeps = kept();
  const [clientFd, serverFd] = native().socketpair();
  const hello = encodeFrame({ type: 'hello', minVersion: 3, maxVersion: 3 });
  native().sendmsg(clientFd, Buffer.concat([hello, bytes]), 0, hello.length + bytes.length);
  const peer: PeerAtAccept = { credentials: { pid: process.pid, uid: 1500, gid: 1500 }, pidfd: native().pidfdOpen(process.pid), cgroup: CGROUP, startTicks: 1 };
  const client = new RawClient(clientFd, 3);
  try {
    await serveConnection(new FdSocket(serverFd), peer, 'ordinary', Date.now(), { ...broker.deps, keptRequests: keptDeps.deps });
    await client.closed();
    return { frames: client.frames, sent: keptDeps.sent, seen: broker.seen };
  } finally {
    client.close();
  }
}

const header = (type: number, length: number) => Buffer.from([type, length >>> 24, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff]);

test('hostile requests: LIST with a payload and a short ATTACH are PROTOCOL; an offset at 2^63 is BAD_OFFSET; a frame only the server sends is PROTOCOL; nothing routed', async () => {
  const attach = (offset: bigint) => {
    const payload = Buffer.alloc(21);
    payload.writeBigUInt64BE(BigInt(entry.id), 0);
    payload.writeBigUInt64BE(offset, 8);
    payload.writeUInt8(1, 16);
    payload.writeUInt16BE(24, 17);
    payload.writeUInt16BE(80, 19);
    return Buffer.concat([header(0x11, 21), payload]);
  };
  const cases: [Buffer, number][] = [
    [Buffer.concat([header(0x0f, 1), Buffer.from([0])]), ErrorCode.PROTOCOL],
    [Buffer.concat([header(0x11, 3), Buffer.alloc(3)]), ErrorCode.PROTOCOL],
    [attach(2n ** 63n), ErrorCode.BAD_OFFSET],
    [header(0x10, 2), ErrorCode.PROTOCOL],
    [header(0x7f, 0), ErrorCode.PROTOCOL],
  ];
  for (const [bytes, code] of cases) {
    const { frames, sent, seen } = await serveRaw(bytes);
    assert.equal(types(frames), ['welcome', `error ${code}`], bytes.toString('hex'));
    assert.equal([sent.length, seen.slotsTaken], [0, 0]);
  }
  const good = await serveRaw(attach(5n));
  assert.is(good.sent.length, 1, 'the same ATTACH with a valid offset is routed');
});

test('a version 3 client that sends no request: HANDSHAKE_TIMEOUT, no slot taken', async () => {
  const { frames, seen } = await serveRaw(Buffer.alloc(0), 200);
  assert.equal(types(frames), ['welcome', `error ${ErrorCode.HANDSHAKE_TIMEOUT}`]);
  assert.is(seen.slotsTaken, 0);
});

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

test('an ATTACH whose worker channel has failed closes the peer\'s pidfd once (WorkerHandle.send took it), never a descriptor that reused its number', async () => {
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
