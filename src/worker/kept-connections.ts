// A kept session's connections as root sees them (docs/architecture.md "Kept sessions"): the START's
// (conn 0) and each one an ATTACH passed to the helper (1..255, a number free again once its DETACHED came:
// the helper frees it as it sends that, and the channel is ordered), with root's own copy of
// each. Root counts them itself (attached from the ATTACH sent, gone at the helper's DETACHED or at its
// own POLLRDHUP on its copy: the helper is never trusted for that), writes what a DETACHED leaves to
// write (its remainder, then the ERROR), and keeps those the session's end is for (DETACHED ending)
// until the last frame.
import { FdSocket } from '../io/index.ts';
import { encodeFrame, errorFrame, type ErrorCodeValue, type Frame } from '../protocol/index.ts';
import type { DetachReport } from '../control/index.ts';
import { flushed } from './final-frame.ts';

interface Connection {
  socket: FdSocket;
  /** Counted as attached: from the ATTACH sent until its DETACHED or our own hang-up watch. */
  attached: boolean;
  /** DETACHED(ending): kept for the last frame, after this rest of the frame in progress. */
  held?: { remainder: Buffer };
  /** Our copy is closed (its peer hung up); the conn stays taken until the helper's DETACHED for it. */
  closed?: boolean;
}

export interface KeptConnectionEvents {
  /** An attached connection is no longer: the session's count goes down (session-state.ts `detach`). */
  detached(conn: number): void;
}

/** The highest conn (DETACHED's u8; 0 is the START's). */
const MAX_CONN = 255;

export class KeptConnections {
  #connections = new Map<number, Connection>();
  #events: KeptConnectionEvents;
  #writeTimeoutMs: number;
  #version: number;

  constructor(events: KeptConnectionEvents, writeTimeoutMs: number, version: number) {
    this.#events = events;
    this.#writeTimeoutMs = writeTimeoutMs;
    this.#version = version;
  }

  /** Attached connections, by root's count. */
  get attached(): number {
    let count = 0;
    for (const connection of this.#connections.values()) if (connection.attached) count += 1;
    return count;
  }

  /** The lowest conn no connection holds (none attached, none held for the last frame), or undefined while
   * all 255 are held at once. A conn is held from its ATTACH until its DETACHED, so it is never given anew
   * while the helper may still write about it. */
  nextConn(): number | undefined {
    for (let conn = 1; conn <= MAX_CONN; conn++) if (!this.#connections.has(conn)) return conn;
    return undefined;
  }

  /** `socket` is attached as `conn` (the START's as 0 at STARTED; another once its ATTACH went). */
  add(conn: number, socket: FdSocket): void {
    const connection: Connection = { socket, attached: true };
    this.#connections.set(conn, connection);
    // Our own watch, never the helper's word: the peer hung up, the connection no longer counts, and our
    // copy goes now, not at the helper's DETACHED (a helper its program stopped would pin it).
    const gone = () => {
      this.#gone(conn, connection);
      this.#letGo(conn, connection);
    };
    if (socket.hungUp) gone();
    else socket.once('hangup', gone);
    socket.watchHangup();
    // A reset (the peer died with our bytes unread) may come as an error without a hang-up first.
    socket.on('error', gone);
  }

  /** The helper let go of `report.conn`: its rest and ERROR written, then our copy closed; or held for the
   * last frame (ending). Unknown conns are the decoder's to refuse (helper-channel.ts). */
  detached(report: DetachReport): void {
    const connection = this.#connections.get(report.conn);
    if (!connection) return;
    this.#gone(report.conn, connection);
    // Its peer hung up and our copy is closed already: nothing to write; the conn is free from now on.
    if (connection.closed) return void this.#connections.delete(report.conn);
    if (report.reason === 'ending') {
      connection.held = { remainder: report.remainder };
      return;
    }
    this.#connections.delete(report.conn);
    void this.#closeAfter(connection.socket, report.remainder, report.code === 0 ? undefined : errorFrame(report.code, report.text));
  }

  /** Where the session's last frame goes (Session#finish writes it): every connection held for it, each
   * after its own rest of the frame in progress. */
  recipients(): { socket: FdSocket; remainder: Buffer | undefined }[] {
    return [...this.#connections.values()].flatMap(({ socket, held }) => (held ? [{ socket, remainder: held.remainder.length > 0 ? held.remainder : undefined }] : []));
  }

  /** Whether `conn` 0 (the START's) is held for the last frame. */
  holds(conn: number): boolean {
    return this.#connections.get(conn)?.held !== undefined;
  }

  /** Closes every copy we hold (the session is over), reading away what each peer left queued. */
  closeAll(): void {
    for (const { socket, closed } of this.#connections.values()) if (!closed) socket.closeDrained();
    this.#connections.clear();
  }

  /** Our copy of a connection whose peer hung up: closed, unless it is held for the last frame. A plain
   * close, not a drain: the helper holds its own copy and may still read what the peer sent before it
   * went (input typed just before a detach); no descriptor rides on a data phase (SO_PASSRIGHTS off). */
  #letGo(conn: number, connection: Connection): void {
    if (connection.held || connection.closed || this.#connections.get(conn) !== connection) return;
    // The number stays taken (nextConn) until the helper's DETACHED: it may still write about this conn.
    connection.closed = true;
    connection.socket.close();
  }

  #gone(conn: number, connection: Connection): void {
    if (!connection.attached) return;
    connection.attached = false;
    this.#events.detached(conn);
  }

  /** A connection the helper let go of: what it left, the ERROR, then the close (each bounded). */
  async #closeAfter(socket: FdSocket, remainder: Buffer, error: Frame | undefined): Promise<void> {
    if (remainder.length > 0 && !socket.closed) socket.writeUrgent(remainder);
    if (error && !socket.closed) socket.writeUrgent(encodeFrame(error, this.#version));
    await flushed(socket, this.#writeTimeoutMs);
    // Another may still hold a copy (PID 1 holds the START's as the unit's stdout): the peer reads EOF
    // from the shutdown, whoever holds one.
    try {
      socket.shutdown('write');
    } catch {}
    socket.closeDrained();
  }
}

/** ERROR then the close, for a connection root refuses before the helper sees it (SESSION_STATE, …):
 * the connection's only frame, not the session's last. */
export async function refuseConnection(socket: FdSocket, code: ErrorCodeValue, message: string, timeoutMs: number, version: number): Promise<void> {
  if (!socket.closed) socket.writeUrgent(encodeFrame(errorFrame(code, message), version));
  await flushed(socket, timeoutMs);
  socket.closeDrained();
}
