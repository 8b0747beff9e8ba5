// The last close of a peer's connection: nothing the peer queued may be left for the kernel to release.
// Closing a Unix socket frees its unread messages, and with them the descriptors riding on them, in the
// thread of whoever closes it last (unix_release_sock, then fput's task work): ours, or PID 1's when it
// releases a unit's stdout. A peer's lingering TCP socket among them holds that close for its linger
// time, and no recvmsg of ours ever saw it to disarm it (socket(7) "SO_LINGER").
import { native } from '../native/binding.ts';
import { closeQuietly, closeReceived } from './fds.ts';

const scratch = Buffer.alloc(64 * 1024);
/** A queue the peer can no longer add to is one socket buffer at most; this only bounds a surprise. */
const MAX_READS = 4096;

/**
 * Shuts our reading side, so the peer cannot queue anything more (a Unix stream peer's sends then fail
 * with EPIPE), and reads away what it queued, closing every descriptor on it as received ones are
 * closed (closeReceived). The socket itself stays open: the caller closes it (or goes on writing).
 * Shutting down acts on the socket, not the descriptor: only for a connection no holder reads again.
 */
export function drainPeer(fd: number): void {
  try {
    native().shutdown(fd, 'read');
  } catch {
    // ENOTCONN, EBADF: nothing can be queued behind it.
  }
  for (let i = 0; i < MAX_READS; i += 1) {
    let message;
    try {
      message = native().recvmsg(fd, scratch, 0, scratch.length, 0);
    } catch {
      return;
    }
    if (!message) return;
    closeReceived(message.fds);
    if (message.bytes === 0 && message.fds.length === 0) return;
  }
}

/** drainPeer, then close: the kernel has nothing of the peer's left to release. */
export function closePeer(fd: number): void {
  drainPeer(fd);
  closeQuietly(fd);
}
