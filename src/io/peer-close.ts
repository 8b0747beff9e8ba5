// The last close of a peer's connection: nothing the peer queued may be left for the kernel to release.
// Closing a Unix socket frees its unread messages, and with them the descriptors riding on them, in the
// thread of whoever closes it last (unix_release_sock, then fput's task work): ours, or PID 1's when it
// releases a unit's stdout. A peer's lingering TCP socket among them holds that close for its linger
// time, and no recvmsg of ours ever saw it to disarm it (socket(7) "SO_LINGER"). Where the kernel has
// SO_PASSRIGHTS (pass-rights.ts), our sockets take no descriptors outside START and nothing is queued.
import { native } from '../native/index.ts';
import { closeQuietly } from './fds.ts';

/** How often a drain the close pool stopped (its queue long) is tried again. */
export const DRAIN_RETRY_MS = 100;

/** Connections whose drain is not finished, by fd: each is closed once its drain completes. */
const deferred = new Set<number>();
let retryTimer: NodeJS.Timeout | undefined;

/**
 * Shuts our reading side, so the peer cannot queue anything more (a Unix stream peer's sends then fail
 * with EPIPE), and reads away what it queued, closing every descriptor on it as received ones are
 * closed (fds.ts closeReceived), in the addon: a full socket buffer holds some 140,000 of them. The
 * socket itself stays open: the caller closes it (or goes on writing). Shutting down acts on the
 * socket, not the descriptor: only for a connection no holder reads again.
 * False when it stopped because the close pool's queue is long (its threads held by a file system
 * that never answers, or a burst not caught up with): the rest is still queued on `fd`.
 */
export function drainPeer(fd: number): boolean {
  try {
    // The addon reads the mount table only if a file arrives (never where SO_PASSRIGHTS refuses them):
    // one read per refused connection was most of the broker's CPU under a connection flood.
    return native().drainPeer(fd).complete;
  } catch {
    return true; // EBADF: nothing left to read
  }
}

/**
 * drainPeer, then close: the kernel has nothing of the peer's left to release. A drain the close pool
 * stopped goes on later (every DRAIN_RETRY_MS) and `fd` is closed when it is done: until then it costs
 * one descriptor, and what is still queued stays in flight, charged to its sender (unix_inflight).
 * True when `fd` is closed now.
 */
export function closePeer(fd: number): boolean {
  if (drainPeer(fd)) {
    closeQuietly(fd);
    return true;
  }
  deferred.add(fd);
  retryTimer ??= setInterval(retryDeferred, DRAIN_RETRY_MS).unref();
  return false;
}

/**
 * `frame` sent (never blocking, any failure ignored: a refused peer may be gone), then closePeer's
 * drain and close, in one native call (refusePeer): the refusal of a flood's connection costs one
 * call and no exception. A drain the close pool stopped goes on as closePeer's does. True when `fd`
 * is closed now.
 */
export function refuseAndClose(fd: number, frame: Buffer): boolean {
  let closed: boolean;
  try {
    closed = native().refusePeer(fd, frame, 0, frame.length);
  } catch (error) {
    if ((error as { code?: string }).code === 'EBADF') return true; // nothing left of it
    // Never a descriptor left open for a failure of ours: the close as without the frame.
    return closePeer(fd);
  }
  if (closed) return true;
  deferred.add(fd);
  retryTimer ??= setInterval(retryDeferred, DRAIN_RETRY_MS).unref();
  return false;
}

/** Connections closePeer has not closed yet: their drains wait for the close pool. */
export function deferredDrains(): number {
  return deferred.size;
}

function retryDeferred(): void {
  for (const fd of deferred) {
    if (!drainPeer(fd)) break; // the queue is long again: the rest waits for the next turn
    deferred.delete(fd);
    closeQuietly(fd);
  }
  if (deferred.size === 0) {
    clearInterval(retryTimer);
    retryTimer = undefined;
  }
}
