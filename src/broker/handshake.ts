// Reads HELLO frame-exact (never a byte of START, which carries the cwd fd) and picks the version.
import { closeReceived, isPeerGone, type FdSocket } from '../io/index.ts';
import { ErrorCode, FrameType, HEADER_SIZE, LATEST_VERSION, PROTOCOL_VERSION, isProtocolError, parseHeader, parsePayload, SessionError, type FrameOf } from '../protocol/index.ts';

/** Versions this supervisor speaks, lowest first (docs/protocol.md "Version 2", "Version 3"). The broker only chooses;
 * the worker and the session helper write and read the frames that differ, told the version at hand-off. */
export const SUPPORTED_VERSIONS: readonly number[] = Array.from({ length: LATEST_VERSION - PROTOCOL_VERSION + 1 }, (_, index) => PROTOCOL_VERSION + index);

/** The highest version both sides speak, or undefined (then ERROR VERSION): a client offering 1..2 gets
 * 1 from a server that speaks only 1, and 2 from one that speaks both. */
export function chooseVersion(hello: FrameOf<'hello'>, supported: readonly number[] = SUPPORTED_VERSIONS): number | undefined {
  return [...supported].reverse().find((version) => version >= hello.minVersion && version <= hello.maxVersion);
}

export async function readHello(socket: FdSocket): Promise<FrameOf<'hello'>> {
  try {
    const header = await socket.readExact(HEADER_SIZE, 1);
    rejectFds(header.fds, header.controlTruncated || header.foreignControl);
    const { type, length } = parseHeader(header.data, 'to-server');
    if (type !== FrameType.HELLO) throw new SessionError(ErrorCode.PROTOCOL, 'protocol error: expected HELLO');
    const payload = await socket.readExact(length, 1);
    rejectFds(payload.fds, payload.controlTruncated || payload.foreignControl);
    return parsePayload(type, payload.data) as FrameOf<'hello'>;
  } catch (error) {
    if (isProtocolError(error)) throw new SessionError(ErrorCode.PROTOCOL, `protocol error: ${error.message}`);
    throw error;
  }
}

export function rejectFds(fds: number[], control: boolean): void {
  if (fds.length === 0 && !control) return;
  closeReceived(fds);
  throw new SessionError(ErrorCode.PROTOCOL, 'protocol error: a descriptor may only travel with START');
}

/** What the peer is told, and what the journal says: a failure that is not the peer's keeps its cause. */
export function handshakeRefusal(error: unknown): { error: SessionError; log: string; internal: boolean } {
  // INTERNAL is the supervisor's own failure (no worker, a hand-off the kernel refused), never the client's.
  if (error instanceof SessionError) return { error, log: error.message, internal: error.wireCode === ErrorCode.INTERNAL };
  const code = (error as { code?: string })?.code;
  const message = (error as Error)?.message ?? String(error);
  // pidfd_open or /proc on a peer that exited: it cannot be authenticated, and it was not our failure.
  if (code === 'ESRCH') {
    return { error: new SessionError(ErrorCode.AUTHENTICATION, 'authentication failed', { cause: error }), log: `peer process is gone: ${message}`, internal: false };
  }
  if (isPeerGone(error)) {
    return { error: new SessionError(ErrorCode.PROTOCOL, 'client closed during the handshake', { cause: error }), log: `client closed during the handshake (${code})`, internal: false };
  }
  return {
    error: new SessionError(ErrorCode.INTERNAL, 'supervisor failed during the handshake; see its journal', { cause: error }),
    log: `handshake failed: ${message}${code ? ` (${code})` : ''}`,
    internal: true,
  };
}
