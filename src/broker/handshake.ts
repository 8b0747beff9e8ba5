// Reads HELLO frame-exact (never a byte of START, which carries the cwd fd) and picks the version.
import type { FdSocket } from '../io/fd-socket.ts';
import { closeAll } from '../io/fds.ts';
import { ErrorCode, FrameType, HEADER_SIZE, PROTOCOL_VERSION, isProtocolError, parseHeader, parsePayload, type FrameOf } from '../protocol/index.ts';
import { SessionError } from '../protocol/session-error.ts';

/** Versions this supervisor speaks, lowest first. */
export const SUPPORTED_VERSIONS: readonly number[] = [PROTOCOL_VERSION];

/** The highest version both sides speak, or undefined. */
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

function rejectFds(fds: number[], control: boolean): void {
  if (fds.length === 0 && !control) return;
  closeAll(fds);
  throw new SessionError(ErrorCode.PROTOCOL, 'protocol error: a descriptor may only travel with START');
}
