// A kept session's helper, reached again through its rendezvous (docs/architecture.md "Kept sessions across
// the supervisor"): its record read back (root's, never the helper's word), a connection to its socket, and
// the helper's HELLO read before anything is sent or the session is held here, so the dialect is judged
// first (session-keep.ts helperDialect). Whatever the helper sends is untrusted: HELLO must come whole,
// first, within the time allowed, and nothing beside it.
import { native } from '../native/index.ts';
import { closeQuietly, closeReceived, passRights } from '../io/index.ts';
import { HelperLimits, HelperMessageType } from '../control/index.ts';
import type { KeptRecord, KeptStore } from '../kept-store/index.ts';

const HELLO_BYTES = HelperLimits.HEADER_SIZE + HelperLimits.HELLO_SIZE;

/** Who must have sent HELLO: the unit's main process (the helper, as systemd knows it) as the client's uid. */
export interface HelperSender {
  pid: number;
  uid: number;
}

/**
 * The record, a connection to the helper (taken by the caller) and the HELLO read on it, or why not.
 * The socket's path is in root's directory, but a root process without capabilities can still replace
 * it (docs/security.md): what answers there is taken for the helper only when the kernel's record of
 * HELLO's sender (SCM_CREDENTIALS) names `sender`, which such a process cannot claim (its own pid, uid 0).
 */
export async function reachKept(store: KeptStore | undefined, unit: string, sessionId: number, prefix: string, timeoutMs: number, sender: HelperSender): Promise<{ record: KeptRecord; fd: number; hello: Buffer } | string> {
  if (!store) return 'kept sessions are not kept past their worker here';
  const read = store.read(unit, sessionId, prefix);
  if ('why' in read) return read.why;
  let fd: number;
  try {
    fd = native().connectUnix(store.socketPath(sessionId), true);
  } catch (error) {
    return `its rendezvous cannot be reached (${(error as Error).message})`;
  }
  // The helper never sends a descriptor: the kernel refuses any it tries.
  passRights(fd, false);
  const hello = await readHello(fd, timeoutMs, sender);
  if (typeof hello === 'string') {
    closeQuietly(fd);
    return `its session helper ${hello}`;
  }
  return { record: read.record, fd, hello };
}

/** Exactly HELLO's bytes (what follows stays queued for the link), or why not. */
function readHello(fd: number, timeoutMs: number, sender: HelperSender): Promise<Buffer | string> {
  const hello = Buffer.alloc(HELLO_BYTES);
  let got = 0;
  return new Promise((resolve) => {
    const done = (result: Buffer | string) => {
      clearTimeout(timer);
      watcher.close();
      resolve(result);
    };
    const timer = setTimeout(() => done(`sent no HELLO within ${timeoutMs} ms`), timeoutMs);
    const watcher = native().watch(fd, { readable: true }, () => {
      let received;
      try {
        received = native().recvmsg(fd, hello, got, HELLO_BYTES - got, 1);
      } catch (error) {
        return done(`could not be read (${(error as Error).message})`);
      }
      if (received === null) return;
      if (received.fds.length > 0 || received.controlTruncated || received.foreignControl) {
        closeReceived(received.fds);
        return done('sent a descriptor');
      }
      if (received.bytes === 0) return done('ended its channel before HELLO');
      const from = received.credentials;
      if (!from || from.pid !== sender.pid || from.uid !== sender.uid) {
        return done(`is not the one answering at its rendezvous: HELLO came from ${from ? `pid ${from.pid} uid ${from.uid}` : 'an unknown sender'}, not the unit's main process (pid ${sender.pid} uid ${sender.uid})`);
      }
      got += received.bytes;
      if (got < HELLO_BYTES) return;
      if (hello[0] !== HelperMessageType.HELLO || hello.readUInt32BE(1) !== HelperLimits.HELLO_SIZE) return done('sent another message than HELLO first');
      done(hello);
    });
  });
}
