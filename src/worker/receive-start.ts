// Reads START frame-exact, so the cwd fd can only arrive with START's own bytes, and checks that fd.
import { readFileSync } from 'node:fs';
import { type FdSocket, closeReceived } from '../io/index.ts';
import { native } from '../native/index.ts';
import { ErrorCode, FrameType, HEADER_SIZE, parseHeader, parsePayload, isProtocolError, type ErrorCodeValue, type FrameOf, SessionError } from '../protocol/index.ts';

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

/** open(2) O_PATH, as /proc/PID/fdinfo's "flags:" field shows it (octal). */
const O_PATH = 0o10000000;

/** The open flags of our own fd, from /proc/self/fdinfo: reading it never touches the file itself. */
export function openFlags(fd: number): number {
  const line = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').find((entry) => entry.startsWith('flags:'));
  return line ? parseInt(line.slice('flags:'.length).trim(), 8) : 0;
}

/** Checks what arrived with START; throws a SessionError, never returns with a doubtful fd. */
export async function checkStartDescriptors(
  frame: FrameOf<'start'>,
  fds: number[],
  control: { controlTruncated: boolean; foreignControl: boolean },
): Promise<number> {
  if (control.controlTruncated) throw badStart('START carried more control data than allowed');
  if (control.foreignControl) throw badStart('START carried control data other than a descriptor');
  if (fds.length !== 1) throw badStart(`START must carry exactly one descriptor, got ${fds.length}`);
  // An O_PATH fd passes fstat but cannot be used as the unit's stdin: refuse it here, at once.
  if (openFlags(fds[0]!) & O_PATH) throw badStart('the START descriptor is an O_PATH descriptor, not an open directory');
  // Never a plain fstat: on a FUSE directory whose getattr never answers it blocks in an uninterruptible
  // wait (once the server has read the request, not even SIGKILL ends it), which holds this process,
  // and its session slot, for as long as the client's file system likes, whichever thread it runs on.
  let stat: { dev: bigint; ino: bigint; directory: boolean };
  try {
    stat = native().statCached(fds[0]!);
  } catch (error) {
    throw badStart(`the START descriptor cannot be examined: ${(error as Error).message}`);
  }
  if (!stat.directory) throw badStart('the START descriptor is not a directory');
  if (stat.dev !== frame.cwdDev || stat.ino !== frame.cwdIno) {
    throw badStart('the START descriptor does not match the device and inode in START');
  }
  return fds[0]!;
}

/** `version`: the protocol version WELCOME named (START gains its keep fields in version 3). */
export async function receiveStart(socket: FdSocket, version = 1): Promise<ReceivedStart> {
  const fds: number[] = [];
  let truncated = false;
  let foreign = false;
  try {
    const header = await socket.readExact(HEADER_SIZE, START_CONTROL_FDS);
    fds.push(...header.fds);
    truncated ||= header.controlTruncated;
    foreign ||= header.foreignControl;
    const { type, length } = parseHeader(header.data, 'to-server', version);
    // Any other frame here is out of order (docs/protocol.md, "Out-of-order frames"): PROTOCOL.
    if (type !== FrameType.START) throw new SessionError(ErrorCode.PROTOCOL, `protocol error: expected START, got ${frameName(type)}`);
    const payload = await socket.readExact(length, START_CONTROL_FDS);
    fds.push(...payload.fds);
    truncated ||= payload.controlTruncated;
    foreign ||= payload.foreignControl;
    const frame = parsePayload(type, payload.data, version) as FrameOf<'start'>;
    const cwdFd = await checkStartDescriptors(frame, fds, { controlTruncated: truncated, foreignControl: foreign });
    return { frame, cwdFd };
  } catch (error) {
    closeReceived(fds);
    if (isProtocolError(error)) throw new SessionError(error.wireCode as ErrorCodeValue, error.message, { cause: error });
    throw error;
  }
}
