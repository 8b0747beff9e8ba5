// The client's connection on the runtime's own socket (Node or Bun): the addon only attaches the cwd fd to START.
// Bun has no uv_poll (loading an addon that calls uv_poll_init aborts the process), so the client never
// watches an fd itself: the runtime reads and writes, and one sendmsg(2) carries START and its fd.
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { native } from '../native/binding.ts';
import { closeQuietly } from '../io/fds.ts';
import { ClientError } from './client-error.ts';

const HANGUP_ERRNOS = new Set(['EPIPE', 'ECONNRESET', 'ENOTCONN']);

export interface RuntimeSocket {
  /** 'end': the server closed cleanly. 'drain': everything queued went to the runtime. */
  on(event: 'end' | 'drain', listener: () => void): this;
  on(event: 'error', listener: (error: ClientError) => void): this;
}

export class RuntimeSocket extends EventEmitter {
  #socket: net.Socket;
  #queue: Buffer[] = [];
  #queuedBytes = 0;
  #closed = false;
  #onData: ((chunk: Buffer) => void) | undefined;
  /** Chunks that arrived before a reader was set. */
  #early: Buffer[] = [];

  private constructor(socket: net.Socket) {
    super();
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      if (this.#closed) return;
      if (this.#onData) this.#onData(chunk);
      else this.#early.push(chunk);
    });
    socket.on('end', () => {
      if (!this.#closed) this.emit('end');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => this.#fail(error));
    socket.on('drain', () => {
      this.#pump();
      // Only from the runtime's event, never inside write(): a listener may write again.
      if (!this.#closed && this.#queue.length === 0) this.emit('drain');
    });
  }

  /** Connects to a Unix stream socket; rejects with CONNECT and the errno. */
  static connect(path: string): Promise<RuntimeSocket> {
    return new Promise((resolve, reject) => {
      const socket = net.createConnection({ path });
      const onError = (error: NodeJS.ErrnoException) => {
        socket.destroy();
        reject(new ClientError('CONNECT', `cannot connect to ${path}: ${error.code ?? error.message}`, { errno: error.code, cause: error }));
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.off('error', onError);
        resolve(new RuntimeSocket(socket));
      });
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Bytes written and not yet taken by the kernel, ours and the runtime's. */
  get writableLength(): number {
    return this.#queuedBytes + this.#socket.writableLength;
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
    if (this.#closed) return;
    this.#queue.push(data);
    this.#queuedBytes += data.length;
    this.#pump();
  }

  /** Hands a control frame to the runtime at once, ahead of data still queued here. */
  writeUrgent(data: Buffer): void {
    if (this.#closed) return;
    this.#socket.write(data);
  }

  /** Resolves once everything written so far has gone to the kernel (writes complete in order), so a
   * sendmsg of ours cannot overtake bytes still in the runtime's queue. */
  flushed(): Promise<void> {
    if (this.#closed || this.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => this.#socket.write(Buffer.alloc(0), () => resolve()));
  }

  /** Sends `data` with `fds` on its first byte in one sendmsg(2) on the runtime's descriptor; what the
   * kernel does not take at once follows through the runtime. Call only when flushed. Closes `fds`
   * (they are sent or void either way). */
  writeWithFds(data: Buffer, fds: number[]): void {
    try {
      if (this.#closed) throw new ClientError('CLOSED', 'the connection was closed locally');
      const fd = (this.#socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
      if (typeof fd !== 'number' || fd < 0) throw new ClientError('IO', 'the runtime does not expose the socket descriptor');
      let sent: number;
      try {
        sent = native().sendmsg(fd, data, 0, data.length, fds);
      } catch (error) {
        const errno = (error as { code?: string }).code;
        const code = errno !== undefined && HANGUP_ERRNOS.has(errno) ? 'HANGUP' : 'IO';
        throw new ClientError(code, `cannot send START: ${errno ?? String(error)}`, { errno, cause: error });
      }
      // The send buffer is empty when START goes (flushed), and START is at most 64 KiB: the kernel takes
      // at least its first byte, which is what carries the fd.
      if (sent < 0) throw new ClientError('IO', 'the socket would block on an empty send buffer', { errno: 'EAGAIN' });
      if (sent < data.length) this.#socket.write(data.subarray(sent));
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

  /** Data goes to the runtime only below its high-water mark, so a control frame waits behind at most
   * that much (the runtime's socket has no urgent lane); stopping there means its last write returned
   * false, so its 'drain' comes and pumps again. */
  #pump(): void {
    while (!this.#closed && this.#queue.length > 0 && this.#socket.writableLength < this.#socket.writableHighWaterMark) {
      const data = this.#queue.shift()!;
      this.#queuedBytes -= data.length;
      this.#socket.write(data);
    }
  }

  #fail(error: NodeJS.ErrnoException): void {
    if (this.#closed) return;
    const hangup = error.code !== undefined && HANGUP_ERRNOS.has(error.code);
    const failure = hangup
      ? new ClientError('HANGUP', 'the server closed the connection', { errno: error.code, cause: error })
      : new ClientError('IO', `socket failure: ${error.code ?? error.message}`, { errno: error.code, cause: error });
    this.close();
    this.emit('error', failure);
  }
}
