// Reads START frame-exact, so the cwd fd can only arrive with START's own bytes, and checks that fd.
import { fstatSync } from 'node:fs';
import type { FdSocket } from '../io/fd-socket.ts';
import { closeAll } from '../io/fds.ts';
import { ErrorCode, FrameType, HEADER_SIZE, parseHeader, parsePayload, isProtocolError, type ErrorCodeValue, type FrameOf } from '../protocol/index.ts';
import { SessionError } from '../protocol/session-error.ts';

/** Control space for this many fds, as the earlier supervisor had (8 + 1): more than one is seen, not truncated. */
export const START_CONTROL_FDS = 9;

export interface ReceivedStart {
  frame: FrameOf<'start'>;
  /** The cwd directory; the caller owns it. */
  cwdFd: number;
}

function frameName(type: number): string {
  return Object.entries(FrameType).find(([, code]) => code === type)?.[0] ?? `type ${type}`;
}

function badStart(message: string): SessionError {
  return new SessionError(ErrorCode.BAD_START, message);
}

/** Checks what arrived with START; throws a SessionError, never returns with a doubtful fd. */
export function checkStartDescriptors(
  frame: FrameOf<'start'>,
  fds: number[],
  control: { controlTruncated: boolean; foreignControl: boolean },
): number {
  if (control.controlTruncated) throw badStart('START carried more control data than allowed');
  if (control.foreignControl) throw badStart('START carried control data other than a descriptor');
  if (fds.length !== 1) throw badStart(`START must carry exactly one descriptor, got ${fds.length}`);
  const stat = fstatSync(fds[0]!, { bigint: true });
  if (!stat.isDirectory()) throw badStart('the START descriptor is not a directory');
  if (stat.dev !== frame.cwdDev || stat.ino !== frame.cwdIno) {
    throw badStart('the START descriptor does not match the device and inode in START');
  }
  return fds[0]!;
}

export async function receiveStart(socket: FdSocket): Promise<ReceivedStart> {
  const fds: number[] = [];
  let truncated = false;
  let foreign = false;
  try {
    const header = await socket.readExact(HEADER_SIZE, START_CONTROL_FDS);
    fds.push(...header.fds);
    truncated ||= header.controlTruncated;
    foreign ||= header.foreignControl;
    const { type, length } = parseHeader(header.data, 'to-server');
    // Any other frame here is out of order (docs/protocol.md, "Out-of-order frames"): PROTOCOL.
    if (type !== FrameType.START) throw new SessionError(ErrorCode.PROTOCOL, `protocol error: expected START, got ${frameName(type)}`);
    const payload = await socket.readExact(length, START_CONTROL_FDS);
    fds.push(...payload.fds);
    truncated ||= payload.controlTruncated;
    foreign ||= payload.foreignControl;
    const frame = parsePayload(type, payload.data) as FrameOf<'start'>;
    const cwdFd = checkStartDescriptors(frame, fds, { controlTruncated: truncated, foreignControl: foreign });
    return { frame, cwdFd };
  } catch (error) {
    closeAll(fds);
    if (isProtocolError(error)) throw new SessionError(error.wireCode as ErrorCodeValue, error.message, { cause: error });
    throw error;
  }
}
