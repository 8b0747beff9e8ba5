// The client's connection on the runtime's own socket (Node or Bun): the runtime reads; we write with sendmsg(2).
// Bun has no uv_poll (loading an addon that calls uv_poll_init aborts the process), so the client never watches
// an fd itself. Reading is the runtime's. Writing goes through the addon's non-blocking sendmsg on the runtime's
// descriptor (START with its fd in one call), so a peer that is gone (EPIPE, ECONNRESET) is not a write error
// that makes the runtime destroy the socket with the peer's last frame (an ERROR, an EXIT) still unread in the
// kernel: the read side reports the end, after those bytes (docs/protocol.md, "A session, in order").
// Only what the kernel will not take now is handed to the runtime's own write queue, which waits for room.
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { native } from '../native/index.ts';
import { closeQuietly } from '../io/index.ts';
import { ClientError } from './client-error.ts';
import { connectHint } from './connect-hint.ts';

const HANGUP_ERRNOS = new Set(['EPIPE', 'ECONNRESET', 'ENOTCONN']);

/** A connected descriptor as the runtime's socket: Node takes it in the constructor, Bun through connect(). */
function adopt(fd: number): net.Socket {
  if (process.versions.bun) return net.connect({ fd } as net.NetConnectOpts);
  return new net.Socket({ fd, readable: true, writable: true });
}

export interface RuntimeSocket {
  /** 'end': the server closed cleanly. 'drain': everything queued has gone to the kernel. */
  on(event: 'end' | 'drain', listener: () => void): this;
  on(event: 'error', listener: (error: ClientError) => void): this;
}

export class RuntimeSocket extends EventEmitter {
  #socket: net.Socket;
  #fd: number;
  /** Data frames waiting behind what the runtime still holds. */
  #queue: Buffer[] = [];
  #queuedBytes = 0;
  /** Bytes handed to the runtime's write queue whose write has not completed. */
  #runtimeBytes = 0;
  /** The peer is gone for writing: later writes are dropped, the read side reports the end. */
  #peerGone = false;
  #closed = false;
  #failed = false;
  #onData: ((chunk: Buffer) => void) | undefined;
  /** Chunks that arrived before a reader was set. */
  #early: Buffer[] = [];

  private constructor(socket: net.Socket, fd: number) {
    super();
    this.#socket = socket;
    this.#fd = fd;
    socket.on('data', (chunk: Buffer) => {
      if (this.#closed) return;
      if (this.#onData) this.#onData(chunk);
      else this.#early.push(chunk);
    });
    socket.on('end', () => {
      if (!this.#closed) this.emit('end');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => this.#fail(error));
  }

  /** Connects to a Unix stream socket; rejects with CONNECT and the errno. The addon connects (a Unix
   * connect completes at once), so what a server sends and closes with before the runtime takes over
   * (a refusal on accept) is in the kernel for the runtime to read, not lost in a failed connect. */
  static connect(path: string): Promise<RuntimeSocket> {
    let fd: number;
    try {
      fd = native().connectUnix(path);
    } catch (error) {
      const errno = (error as { code?: string }).code;
      const hint = connectHint(errno);
      return Promise.reject(new ClientError('CONNECT', `cannot connect to ${path}: ${errno ?? String(error)}${hint ? `; ${hint}` : ''}`, { errno, cause: error }));
    }
    // Only root's server may have what START carries: the caller's whole environment (tokens, keys) and a
    // descriptor of its working directory. A socket path of the caller's choosing (--socket,
    // OPENCODE_PTY_SOCKET) may be one another account created; the kernel fixed the listener's
    // credentials at its listen(2), before anything is sent.
    let uid: number;
    try {
      uid = native().peerCredentials(fd).uid;
    } catch (error) {
      closeQuietly(fd);
      const errno = (error as { code?: string }).code;
      return Promise.reject(new ClientError('CONNECT', `cannot read the credentials of ${path}: ${errno ?? String(error)}`, { errno, cause: error }));
    }
    if (uid !== 0) {
      closeQuietly(fd);
      return Promise.reject(new ClientError('SERVER_UID', `the server at ${path} runs as uid ${uid}, not root: nothing was sent`));
    }
    try {
      return Promise.resolve(new RuntimeSocket(adopt(fd), fd));
    } catch (error) {
      closeQuietly(fd);
      return Promise.reject(new ClientError('IO', `the runtime cannot take the socket: ${String(error)}`, { cause: error }));
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Bytes written and not yet taken by the kernel. */
  get writableLength(): number {
    return this.#queuedBytes + this.#runtimeBytes;
  }

  startReading(onData: (chunk: Buffer) => void): void {
    this.#onData = onData;
    for (const chunk of this.#early.splice(0)) {
      if (this.#closed) return;
      onData(chunk);
    }
  }

  /** Queues data behind earlier data. */
  write(data: Buffer): void {
    if (this.#closed || this.#peerGone || this.#failed) return;
    this.#queue.push(data);
    this.#queuedBytes += data.length;
    this.#pump();
  }

  /** Sends a control frame at once, ahead of data still queued here. */
  writeUrgent(data: Buffer): void {
    if (this.#closed || this.#peerGone || this.#failed) return;
    this.#send(data);
  }

  /** Resolves once everything written so far has gone to the kernel, so bytes with fds cannot overtake it. */
  flushed(): Promise<void> {
    if (this.#closed || this.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (this.#closed || this.writableLength === 0) {
          this.off('drain', check);
          resolve();
        }
      };
      this.on('drain', check);
    });
  }

  /** Sends `data` with `fds` on its first byte in one sendmsg(2); what the kernel does not take at once
   * follows through the runtime. Call only when flushed. Closes `fds` (sent or void either way). */
  writeWithFds(data: Buffer, fds: number[]): void {
    try {
      if (this.#closed) throw new ClientError('CLOSED', 'the connection was closed locally');
      if (this.#peerGone) return;
      const sent = this.#sendmsg(data, fds);
      // The send buffer is empty when START goes (flushed) and START is at most 64 KiB: the kernel takes
      // at least its first byte, which is what carries the fd.
      if (sent === -1) throw new ClientError('IO', 'the socket would block on an empty send buffer', { errno: 'EAGAIN' });
      if (sent >= 0 && sent < data.length) this.#viaRuntime(data.subarray(sent));
    } finally {
      for (const fd of fds) closeQuietly(fd);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#onData = undefined;
    this.#socket.destroy();
  }

  /** sendmsg on the runtime's descriptor: bytes sent, -1 when it would block, -2 when the peer is gone. */
  #sendmsg(data: Buffer, fds?: number[]): number {
    try {
      return native().sendmsg(this.#fd, data, 0, data.length, fds);
    } catch (error) {
      const errno = (error as { code?: string }).code;
      if (errno !== undefined && HANGUP_ERRNOS.has(errno)) {
        // Not reported here: what the peer sent before it went is still to be read.
        this.#peerGone = true;
        this.#queue = [];
        this.#queuedBytes = 0;
        return -2;
      }
      throw new ClientError('IO', `cannot send: ${errno ?? String(error)}`, { errno, cause: error });
    }
  }

  /** Sends now, behind whatever the runtime still holds. */
  #send(data: Buffer): void {
    if (this.#runtimeBytes > 0) return this.#viaRuntime(data);
    let sent: number;
    try {
      sent = this.#sendmsg(data);
    } catch (error) {
      return this.#failWith(error as ClientError, true);
    }
    if (sent === -2 || sent === data.length) return;
    this.#viaRuntime(sent === -1 ? data : data.subarray(sent));
  }

  /** The kernel is full: the runtime's queue waits for room (its own poll), in order. */
  #viaRuntime(data: Buffer): void {
    this.#runtimeBytes += data.length;
    this.#socket.write(data, () => {
      this.#runtimeBytes -= data.length;
      if (this.#runtimeBytes > 0 || this.#closed) return;
      this.#pump();
      if (this.#queue.length === 0 && !this.#closed) this.emit('drain');
    });
  }

  /** Data goes to the kernel while it takes it; once it does not, the rest waits for the runtime. */
  #pump(): void {
    while (!this.#closed && !this.#peerGone && this.#queue.length > 0 && this.#runtimeBytes === 0) {
      const data = this.#queue.shift()!;
      this.#queuedBytes -= data.length;
      this.#send(data);
    }
  }

  #fail(error: NodeJS.ErrnoException): void {
    const hangup = error.code !== undefined && HANGUP_ERRNOS.has(error.code);
    this.#failWith(
      hangup
        ? new ClientError('HANGUP', 'the server closed the connection', { errno: error.code, cause: error })
        : new ClientError('IO', `socket failure: ${error.code ?? error.message}`, { errno: error.code, cause: error }),
      false,
    );
  }

  /** Reports a failure once; the owner closes. `later`: a failed send inside write(), under its caller. */
  #failWith(error: ClientError, later: boolean): void {
    if (this.#closed || this.#failed) return;
    this.#failed = true;
    this.#queue = [];
    this.#queuedBytes = 0;
    const report = () => {
      if (!this.#closed) this.emit('error', error);
    };
    if (later) process.nextTick(report);
    else report();
  }
}
