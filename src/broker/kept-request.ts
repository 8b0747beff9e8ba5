// Version 3's requests that are not START (LIST, ATTACH, STOP_SESSION): read whole by the broker (no
// descriptor may travel with them), checked against the principals (principals.ts), then answered
// (LIST) or routed by session id to the worker that runs the session, with the connection and the
// peer's pidfd; a session whose end root keeps past its unit is answered here (kept-ended.ts). docs/protocol.md "Version 3", docs/security.md "Who may list and attach".
import { closeQuietly, type FdSocket } from '../io/index.ts';
import type { Logger } from '../log.ts';
import { native } from '../native/index.ts';
import { ErrorCode, FrameType, HEADER_SIZE, KEEP_VERSION, Role, SessionError, encodeFrame, isProtocolError, parseHeader, parsePayload, sessionsFrame, type FrameOf, type SessionEntry } from '../protocol/index.ts';
import type { KeptPeer, BrokerMessage } from '../control/index.ts';
import type { PeerAtAccept } from './accept-gate.ts';
import { rejectFds } from './handshake.ts';
import { EVERY, type Found, type KeptScope } from './kept-sessions.ts';
import { attachAnswer, stopAnswer } from './kept-ended.ts';
import type { EndedRecord } from '../kept-store/index.ts';
import { decide, principalNeedsMainPid, principalNeedsPtrace, type Request } from './principals.ts';
import { CAP_SYS_PTRACE, pidfdHasCapability, type ClientService } from '../identity/index.ts';

/** What routing needs of a worker. */
export type KeptRoute = { send(message: BrokerMessage, fds?: number[]): void; child: { pid?: number }; unit: string | undefined };

export type KeptRequestFrame = FrameOf<'list'> | FrameOf<'attach'> | FrameOf<'stop-session'>;

export interface KeptRequestDeps {
  /** config client.uid: the one account served. */
  clientUid: number;
  /** Whether `pid` is the client service's MainPID by a look begun now (ClientService.isMainPidNow);
   * false without a client service. */
  isMainPid(pid: number): Promise<boolean>;
  kept: {
    /** The kept sessions `scope` reaches (the principal's `sees`). */
    list(scope: KeptScope): Promise<SessionEntry[]>;
    /** The session's worker within `scope`; one still starting may be waited for (KeptSessions.reach). */
    find(id: number, scope: KeptScope): Found<KeptRoute> | Promise<Found<KeptRoute>>;
    /** The end root keeps of session `id` within `scope` (its unit is gone), forgotten as it is taken. */
    takeEnded?(id: number, scope: KeptScope): EndedRecord | undefined;
  };
  log: Logger;
  /** The client service (config client.service) whose sessions a principal that `sees: 'service'` reaches. */
  service?: string;
  /** Whether the process the pidfd names holds CAP_SYS_PTRACE now (default: read through the pidfd). */
  hasPtrace?(pidfd: number): boolean;
}

/**
 * KeptRequestDeps.isMainPid from the client service (none: nobody is its MainPID). A look that failed
 * (the bus did not answer) is no "no": it throws INTERNAL, which a client may retry, rather than
 * telling the agent itself NOT_PERMITTED.
 */
export function mainPidLook(service: Pick<ClientService, 'isMainPidNow'> | undefined): (pid: number) => Promise<boolean> {
  return async (pid) => {
    if (!service) return false;
    const { main, snapshot } = await service.isMainPidNow(pid);
    if (snapshot.error) throw new SessionError(ErrorCode.INTERNAL, `the client service's state could not be read: ${snapshot.error.message}`, { cause: snapshot.error });
    return main;
  };
}

const REQUEST_OF: Record<KeptRequestFrame['type'], Request> = { list: 'list', attach: 'attach', 'stop-session': 'stop-session' };

/** Reads the request frame-exact: a descriptor riding on it, or any frame but these three, is PROTOCOL. */
export async function readKeptRequest(socket: FdSocket): Promise<KeptRequestFrame> {
  try {
    const header = await socket.readExact(HEADER_SIZE, 1);
    rejectFds(header.fds, header.controlTruncated || header.foreignControl);
    const { type, length } = parseHeader(header.data, 'to-server', KEEP_VERSION);
    if (type !== FrameType.LIST && type !== FrameType.ATTACH && type !== FrameType.STOP_SESSION) {
      throw new SessionError(ErrorCode.PROTOCOL, 'protocol error: expected START, LIST, ATTACH or STOP_SESSION');
    }
    const payload = length > 0 ? await socket.readExact(length, 1) : undefined;
    if (payload) rejectFds(payload.fds, payload.controlTruncated || payload.foreignControl);
    return parsePayload(type, payload?.data ?? Buffer.alloc(0), KEEP_VERSION) as KeptRequestFrame;
  } catch (error) {
    if (isProtocolError(error)) throw new SessionError(error.wireCode === ErrorCode.BAD_OFFSET ? ErrorCode.BAD_OFFSET : ErrorCode.PROTOCOL, `protocol error: ${error.message}`);
    throw error;
  }
}

/**
 * Serves one whole request; takes the peer's pidfd whatever happens (handed to a worker with the
 * connection, or closed here). `confirmed` is called once the peer is known as a principal that may
 * make it (the MainPID, root): its admission's rate token goes back (admission.ts refund). Returns true when the connection went to a worker (the caller then
 * only closes its own copy of the socket, never drained: the worker reads it now); false when it was
 * answered here (SESSIONS), to be closed by the caller. Throws a SessionError for a refusal.
 */
export async function serveKeptRequest(socket: FdSocket, frame: KeptRequestFrame, peer: PeerAtAccept, pidfd: number, deps: KeptRequestDeps, confirmed: () => void = () => undefined): Promise<boolean> {
  let pidfdHanded = false;
  try {
    return await serve(socket, frame, peer, pidfd, deps, { confirmed, handing: () => (pidfdHanded = true) });
  } finally {
    if (!pidfdHanded) closeQuietly(pidfd);
  }
}

async function serve(socket: FdSocket, frame: KeptRequestFrame, peer: PeerAtAccept, pidfd: number, deps: KeptRequestDeps, to: { confirmed(): void; handing(): void }): Promise<boolean> {
  const { credentials } = peer;
  const request = REQUEST_OF[frame.type];
  let mainPid = false;
  if (principalNeedsMainPid(request, credentials.uid, deps.clientUid)) {
    // The fresh look names the MainPID; the pidfd says the process that asked is the one alive with it.
    mainPid = (await deps.isMainPid(credentials.pid)) && samePid(pidfd, credentials.pid);
  }
  const ptrace = principalNeedsPtrace(request, credentials.uid) && (deps.hasPtrace ?? ((fd) => pidfdHasCapability(fd, CAP_SYS_PTRACE)))(pidfd);
  const decision = decide(request, { uid: credentials.uid, clientUid: deps.clientUid, mainPid, ptrace });
  if (!decision.allowed) throw new SessionError(decision.code, decision.message);
  to.confirmed();
  const scope: KeptScope = decision.principal.sees === 'every' ? EVERY : { sees: 'service', service: deps.service };
  const principal = decision.principal.name === 'root' ? 'root' : 'main-pid';
  if (frame.type === 'list') {
    const entries = await deps.kept.list(scope);
    entries.sort((a, b) => a.startedAtMs - b.startedAtMs || a.id - b.id);
    const refused = (entry: SessionEntry, error: Error) => deps.log('warning', `LIST leaves out kept session ${entry.id}: ${error.message}`);
    socket.write(encodeFrame(sessionsFrame(entries, refused), KEEP_VERSION));
    return false;
  }
  const found = await deps.kept.find(frame.id, scope);
  if ('code' in found) {
    // No live session of that id: one whose unit ended with nobody attached is answered from the end root
    // kept, which is forgotten then. A live one is always asked first: an end never answers for it.
    const ended = found.code === ErrorCode.NO_SESSION ? deps.kept.takeEnded?.(frame.id, scope) : undefined;
    if (!ended) throw new SessionError(found.code, found.message);
    const frames = frame.type === 'attach' ? attachAnswer(ended, frame) : [stopAnswer(ended)];
    for (const bytes of frames.map((answer) => encodeFrame(answer, KEEP_VERSION))) socket.write(bytes);
    deps.log('info', `${frame.type === 'attach' ? 'ATTACH' : 'STOP_SESSION'} of kept session ${frame.id}, ended (${ended.end.result}), by ${principal} pid ${credentials.pid} uid ${credentials.uid}: its end is given and forgotten`, { SESSION_UNIT: ended.session.unit, PEER_PID: credentials.pid, PEER_UID: credentials.uid });
    return false;
  }
  const who: KeptPeer = { pid: credentials.pid, uid: credentials.uid, principal };
  const message: BrokerMessage =
    frame.type === 'attach'
      ? { type: 'attach', role: frame.role === Role.CONTROL ? 'control' : 'observe', fromOffset: frame.fromOffset.toString(), rows: frame.rows, cols: frame.cols, peer: who }
      : { type: 'stop-session', peer: who };
  const handed = native().dupCloexec(socket.fd);
  // WorkerHandle.send takes both descriptors, sent or not (it closes them when it throws): closed
  // again here, the pidfd's number could be another owner's by then.
  to.handing();
  try {
    found.worker.send(message, [handed, pidfd]);
  } catch (error) {
    throw new SessionError(ErrorCode.INTERNAL, `hand-off to worker ${found.worker.child.pid} failed: ${(error as Error).message}`, { cause: error });
  }
  const what = frame.type === 'attach' ? `ATTACH (${message.type === 'attach' ? message.role : ''}, from ${frame.fromOffset === 0xffff_ffff_ffff_ffffn ? 'now' : frame.fromOffset})` : 'STOP_SESSION';
  deps.log('info', `${what} of kept session ${frame.id} by ${principal} pid ${credentials.pid} uid ${credentials.uid}`, { SESSION_UNIT: found.worker.unit, PEER_PID: credentials.pid, PEER_UID: credentials.uid });
  return true;
}

function samePid(pidfd: number, pid: number): boolean {
  try {
    return native().pidfdPid(pidfd) === pid;
  } catch {
    return false;
  }
}
