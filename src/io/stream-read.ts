// One streaming read: recvmsg into a scratch buffer, telling data, EOF and forbidden control data apart.
import { native } from '../native/index.ts';
import { closeReceived } from './fds.ts';
import { fromSystemError, type IoErrorCode } from './io-error.ts';

/** Control space of a streaming read: enough to see that fds came (and close them), never to keep them. */
const STREAM_CONTROL_FDS = 4;

export type StreamRead =
  | { kind: 'data'; chunk: Buffer }
  | { kind: 'eof' }
  /** Control data arrived: any fds are closed already; the bytes that carried it are discarded. */
  | { kind: 'control'; code: Extract<IoErrorCode, 'UNEXPECTED_FD' | 'UNEXPECTED_CONTROL'> }
  | { kind: 'blocked' };

/** Throws an IoError when recvmsg fails. */
export function readChunk(fd: number, scratch: Buffer): StreamRead {
  let message;
  try {
    message = native().recvmsg(fd, scratch, 0, scratch.length, STREAM_CONTROL_FDS);
  } catch (error) {
    throw fromSystemError(error, 'recvmsg');
  }
  if (message === null) return { kind: 'blocked' };
  if (message.fds.length > 0 || message.controlTruncated) {
    closeReceived(message.fds);
    return { kind: 'control', code: 'UNEXPECTED_FD' };
  }
  if (message.foreignControl) return { kind: 'control', code: 'UNEXPECTED_CONTROL' };
  if (message.bytes === 0) return { kind: 'eof' };
  const chunk = Buffer.allocUnsafe(message.bytes);
  scratch.copy(chunk, 0, 0, message.bytes);
  return { kind: 'data', chunk };
}
