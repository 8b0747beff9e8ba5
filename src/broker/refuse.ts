// Refusing a connection without ever blocking: one ERROR frame, then what the peer sent is read away.
import { refuseAndClose, type FdSocket } from '../io/index.ts';
import { native } from '../native/index.ts';
import { encodeFrame, errorFrame, type ErrorCodeValue } from '../protocol/index.ts';

/** Best effort and never blocking: a refused peer may not be reading. */
export function sendError(fd: number, code: ErrorCodeValue, message: string): void {
  try {
    const frame = encodedError(code, message);
    native().sendmsg(fd, frame, 0, frame.length);
  } catch {}
}

/** sendError, then the last close (closePeer's, in one native call: refuseAndClose): what the peer sent is read away first, since closing a
 * Unix socket with unread input resets the peer's side, which could then lose the ERROR frame before
 * reading it, and the kernel would release the descriptors on that input in our thread, a lingering
 * TCP socket among them holding the broker for its linger time. `fd` is closePeer's from here on. */
export function refuseNow(fd: number, code: ErrorCodeValue, message: string): void {
  refuseAndClose(fd, encodedError(code, message));
}

/** refuseNow for a connection already an FdSocket; nothing once it is closed. */
export function refuseSocket(socket: FdSocket, code: ErrorCodeValue, message: string): void {
  if (socket.closed) return;
  sendError(socket.fd, code, message);
  socket.closeDrained();
}

/** A flood is refused with the same few frames over and over: each is encoded once (bounded). */
const encoded = new Map<string, Buffer>();
const MAX_ENCODED = 64;

function encodedError(code: ErrorCodeValue, message: string): Buffer {
  const key = `${code}\0${message}`;
  let frame = encoded.get(key);
  if (frame) return frame;
  frame = encodeFrame(errorFrame(code, message));
  if (encoded.size < MAX_ENCODED) encoded.set(key, frame);
  return frame;
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
    refuseNow(fd, code, message);
  }
}
