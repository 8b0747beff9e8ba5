// The last close of a peer's connection: nothing the peer queued may be left for the kernel to release.
// Closing a Unix socket frees its unread messages, and with them the descriptors riding on them, in the
// thread of whoever closes it last (unix_release_sock, then fput's task work): ours, or PID 1's when it
// releases a unit's stdout. A peer's lingering TCP socket among them holds that close for its linger
// time, and no recvmsg of ours ever saw it to disarm it (socket(7) "SO_LINGER"). Where the kernel has
// SO_PASSRIGHTS (pass-rights.ts), our sockets take no descriptors outside START and nothing is queued.
import { native } from '../native/binding.ts';
import { closeQuietly } from './fds.ts';

/**
 * Shuts our reading side, so the peer cannot queue anything more (a Unix stream peer's sends then fail
 * with EPIPE), and reads away what it queued, closing every descriptor on it as received ones are
 * closed (fds.ts closeReceived), in the addon: a full socket buffer holds some 140,000 of them. The
 * socket itself stays open: the caller closes it (or goes on writing). Shutting down acts on the
 * socket, not the descriptor: only for a connection no holder reads again.
 * False when every close thread of this process was taken (fds.ts closeReceived): the rest of the
 * queue is left in flight and the caller must leave `fd` open for the process's exit to release.
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

/** drainPeer, then close: the kernel has nothing of the peer's left to release. False (and `fd` left
 * open) when the drain stopped at the bound of close threads. */
export function closePeer(fd: number): boolean {
  if (!drainPeer(fd)) return false;
  closeQuietly(fd);
  return true;
}
