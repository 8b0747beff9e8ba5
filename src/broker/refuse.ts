// Refusing a connection without ever blocking: one ERROR frame, then what the peer sent is read away.
import { closeQuietly, closeReceived } from '../io/fds.ts';
import { native } from '../native/binding.ts';
import { encodeFrame, errorFrame, type ErrorCodeValue } from '../protocol/index.ts';

/** Best effort and never blocking: a refused peer may not be reading. */
export function sendErrorNow(fd: number, code: ErrorCodeValue, message: string): void {
  try {
    const frame = encodeFrame(errorFrame(code, message));
    native().sendmsg(fd, frame, 0, frame.length);
  } catch {}
  discardInput(fd);
}

const discardBuffer = Buffer.alloc(16 * 1024);

/** Reads away what the peer already sent (closing any fds on it): closing a Unix socket with unread
 * input resets the peer's side, and it could then lose the ERROR frame before reading it. */
function discardInput(fd: number): void {
  for (let i = 0; i < 4; i += 1) {
    let message;
    try {
      message = native().recvmsg(fd, discardBuffer, 0, discardBuffer.length, 1);
    } catch {
      return;
    }
    if (!message) return;
    closeReceived(message.fds);
    if (message.bytes === 0) return;
  }
}

/** Accepts every queued connection on a listening socket and refuses it. */
export function refuseQueued(listenFd: number, code: ErrorCodeValue, message: string): void {
  for (;;) {
    let fd: number;
    try {
      fd = native().accept(listenFd);
    } catch {
      return;
    }
    if (fd < 0) return;
    sendErrorNow(fd, code, message);
    closeQuietly(fd);
  }
}
