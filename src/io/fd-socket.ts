// One non-blocking Unix stream socket driven by one native watcher, so fds riding on its bytes are never lost to libuv.
// libuv reads stream sockets with plain read(), which drops SCM_RIGHTS fds, and pause() does not stop it: every
// socket that may carry or must reject an fd goes through this class instead of net.Socket.
import { EventEmitter } from 'node:events';
import { native, type PollEvents } from '../native/index.ts';
import type { ExactRead } from './exact-read.ts';
import { closeQuietly } from './fds.ts';
import { closePeer } from './peer-close.ts';
import { IoError, fromSystemError } from './io-error.ts';
import { rethrowLater } from './rethrow-later.ts';
import { SocketReader } from './socket-reader.ts';
import { SocketWatch } from './socket-watch.ts';
import { SocketWriter } from './socket-writer.ts';

export type { ExactRead } from './exact-read.ts';

export interface FdSocketOptions {
  /** Most bytes write() may hold queued (default 8 MiB); beyond it write() throws QUEUE_FULL. */
  maxQueuedBytes?: number;
  /** Size of one streaming read (default 64 KiB). */
  readBufferSize?: number;
}

const DEFAULT_MAX_QUEUED = 8 * 1024 * 1024;
const DEFAULT_READ_BUFFER = 64 * 1024;

export interface FdSocket {
  /** 'end': EOF read while streaming. 'hangup': the peer shut its writing side or closed, reported once, even
   * while paused, and at the latest just before 'end'. 'drain': a queue that had to wait for the kernel is empty.
   * 'close': close() ran. */
  on(event: 'end' | 'hangup' | 'drain' | 'close', listener: () => void): this;
  on(event: 'error', listener: (error: IoError) => void): this;
  once(event: 'end' | 'hangup' | 'drain' | 'close', listener: () => void): this;
  once(event: 'error', listener: (error: IoError) => void): this;
}

export class FdSocket extends EventEmitter {
  #fd: number;
  readonly #watch: SocketWatch;
  /** A fatal poll error: the watcher is gone for good. */
  #dead = false;
  readonly #reader: SocketReader;
  readonly #writer: SocketWriter;

  /** Takes ownership of `fd` (closed by close(), or here if it cannot be made non-blocking). */
  constructor(fd: number, options: FdSocketOptions = {}) {
    super();
    try {
      native().setNonBlocking(fd, true);
    } catch (error) {
      closeQuietly(fd);
      throw fromSystemError(error, 'fcntl');
    }
    this.#fd = fd;
    this.#watch = new SocketWatch(fd, this.#onEvents);
    this.#reader = new SocketReader(fd, options.readBufferSize ?? DEFAULT_READ_BUFFER, {
      interestChanged: () => this.#updateInterest(),
      emit: (event) => this.#emitSafe(event),
      error: (error) => this.#emitSafe('error', error),
      fatal: (error) => this.#fatal(error),
    });
    this.#writer = new SocketWriter(fd, options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED, {
      blockedChanged: () => this.#updateInterest(),
      drained: () => this.#emitSafe('drain'),
      // Reported on the next tick: a failed send may happen inside write(), under the caller. While
      // something reads, a peer that is gone is left for the read side to report, after the bytes it
      // sent before going (e.g. a final EXIT frame behind which our CREDIT could no longer be sent).
      failed: (error) =>
        process.nextTick(() => {
          if (this.#fd >= 0 && !(this.#reader.reading && error.code === 'PEER_GONE')) this.#emitSafe('error', error);
        }),
    });
  }

  /** The descriptor, or -1 once closed. */
  get fd(): number {
    return this.#fd;
  }

  get closed(): boolean {
    return this.#fd < 0;
  }

  /** Bytes queued and not yet taken by the kernel. */
  get writableLength(): number {
    return this.#writer.bytes;
  }

  get maxQueuedBytes(): number {
    return this.#writer.max;
  }

  /** The peer has shut its writing side or closed ('hangup' was reported). */
  get hungUp(): boolean {
    return this.#reader.hungUp;
  }

  /** Why a send failed, once one has (reported through 'error' too): later writes are dropped. Set
   * within the write() whose send failed, so a caller handing over fds can tell at once they never went. */
  get writeFailure(): IoError | undefined {
    return this.#writer.failure;
  }

  /** Reads exactly n bytes, never more, so bytes after them (and any fd riding on those) stay in the kernel
   * for whoever reads next. fds are gathered across the partial reads; each recvmsg has control space for what
   * is left of maxFds (at least one, so a stray fd is seen, never silently dropped): the caller checks the
   * count. Rejects EOF, CLOSED, BUSY, PEER_GONE or SYSCALL, closing every fd received so far. */
  readExact(n: number, maxFds: number): Promise<ExactRead> {
    const refusal = this.#readRefusal(this.#reader.busy);
    if (refusal) return Promise.reject(refusal);
    return new Promise<ExactRead>((resolve, reject) => {
      this.#reader.startExact(n, maxFds, resolve, reject);
      this.#updateInterest();
    });
  }

  /**
   * The next byte the peer sent, looked at and left queued (recv MSG_PEEK with no control buffer), with
   * any descriptor riding on it, for whoever reads next: the broker tells version 3's requests apart
   * by their type byte while a START's directory fd stays queued for its worker. Rejects EOF, CLOSED,
   * BUSY or PEER_GONE.
   */
  peekByte(): Promise<number> {
    const refusal = this.#readRefusal(this.#reader.busy || this.#reader.peeking);
    if (refusal) return Promise.reject(refusal);
    return new Promise<number>((resolve, reject) => {
      this.#reader.startPeek(resolve, reject);
      this.#updateInterest();
    });
  }

  #readRefusal(busy: boolean): IoError | undefined {
    if (this.#fd < 0) return new IoError('CLOSED', 'socket is closed');
    if (busy) return new IoError('BUSY', 'a read is already in progress');
    if (this.#dead) return new IoError('PEER_GONE', 'the socket failed earlier');
    if (this.#reader.ended) return new IoError('EOF', 'the peer closed the connection');
    return undefined;
  }

  /** Streams every byte to onData from the event loop. An fd arriving here is closed at once and reported
   * as 'error' UNEXPECTED_FD, and reading stops (those bytes are not delivered). */
  startReading(onData: (chunk: Buffer) => void): void {
    if (this.#fd < 0) throw new IoError('CLOSED', 'socket is closed');
    this.#reader.startStream(onData);
    this.#updateInterest();
  }

  /** Watches for the peer's hang-up ('hangup'), reading nothing: a socket whose bytes are another's to
   * read (a kept session's connection, which its helper reads) and whose going is still ours to see. */
  watchHangup(): void {
    this.#updateInterest();
  }

  /** Stops reading (the kernel buffer fills and the peer's writes block) but keeps watching for hang-up. */
  pauseReading(): void {
    this.#reader.setPaused(true);
    this.#updateInterest();
  }

  resumeReading(): void {
    this.#reader.setPaused(false);
    this.#updateInterest();
  }

  get isPaused(): boolean {
    return this.#reader.paused;
  }

  /** Queues one write and sends what the kernel takes now. The queue owns `fds` from here on: they are
   * attached to the first sendmsg of this data and closed once sent (or when the queue is dropped). A write
   * carrying fds is never combined with other writes, so when the kernel has room its whole buffer and its
   * fds go out in ONE sendmsg; if the kernel takes only part, the fds still ride on its first bytes.
   * Throws CLOSED or QUEUE_FULL (and then `fds` stay the caller's). After a write failure was reported
   * through 'error', later writes are dropped silently (their fds closed). */
  write(data: Buffer, fds: number[] = []): void {
    if (this.#fd < 0) throw new IoError('CLOSED', 'socket is closed');
    this.#writer.write(data, fds);
  }

  /** Queues one complete frame ahead of all queued data not yet started (never inside a partly sent write),
   * so control frames never wait behind data. */
  writeUrgent(data: Buffer): void {
    if (this.#fd < 0) throw new IoError('CLOSED', 'socket is closed');
    this.#writer.writeUrgent(data);
  }

  /** Drops queued writes not yet started (closing their fds); a partly sent one finishes, so the
   * stream stays well framed. For a last frame that nothing queued earlier may follow. */
  discardQueued(): void {
    if (this.#fd >= 0) this.#writer.discardUnstarted();
  }

  /** shutdown(2). Does not wait for the queue: shut the writing side after 'drain'. ENOTCONN is ignored. */
  shutdown(how: 'read' | 'write' | 'both'): void {
    if (this.#fd < 0) return;
    try {
      native().shutdown(this.#fd, how);
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOTCONN') throw fromSystemError(error, 'shutdown');
    }
  }

  /** The last close of a peer's connection (peer-close.ts): shuts our reading side, reads away and
   * closes what the peer queued, descriptors included, then close(). Only when no other holder of
   * this socket (a dup handed on, a unit's stdout) is to read from it again. */
  closeDrained(): boolean {
    if (this.#fd < 0) return true;
    const fd = this.#fd;
    this.close(true);
    // False: the drain waits for the close pool, and closePeer closes `fd` once it is done.
    return closePeer(fd);
  }

  /** Idempotent: stops the watcher, fails a pending readExact with CLOSED, closes queued and received fds
   * and the socket (unless `leaveOpen`: closeDrained hands it to peer-close.ts). */
  close(leaveOpen = false): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    this.#watch.close();
    this.#writer.drop();
    this.#reader.close();
    if (!leaveOpen) closeQuietly(fd);
    this.#emitSafe('close');
  }

  /** Nothing on this socket can progress any more; the owner closes it. */
  #stop(): void {
    this.#watch.close();
    this.#dead = true;
    this.#writer.drop();
    this.#reader.stopStreaming();
    this.#updateInterest();
  }

  /** A poll error: nothing on this socket can progress any more; the owner closes it. */
  #fatal(error: IoError): void {
    this.#stop();
    this.#reader.fail(error);
    this.#emitSafe('error', error);
  }

  #onEvents = (events: PollEvents): void => {
    try {
      if (this.#fd < 0) return;
      if (events.hangup && this.#reader.noteHangup() && this.#fd < 0) return;
      if (events.error || events.status < 0) {
        // POLLERR on a Unix stream socket is a pending ECONNRESET: the peer closed with our bytes unread.
        // What it sent before closing is still queued, and recvmsg returns that first (the kernel checks
        // sk_err only once the queue is empty), so a reader gets every byte, e.g. a final EXIT frame.
        // libuv stops the poll handle after it (uv__poll_io), so this socket is done either way.
        this.#reader.readAfterReset();
        if (this.#fd < 0) return;
        if (this.#reader.ended) return this.#stop();
        return this.#fatal(new IoError('PEER_GONE', `poll reported an error (status ${events.status})`));
      }
      if (events.writable && this.#writer.blocked) this.#writer.flush();
      if (events.readable && this.#fd >= 0) this.#reader.onReadable();
      this.#updateInterest();
    } catch (error) {
      // Nothing may escape into the native callback; a bug here surfaces as an ordinary uncaught exception.
      rethrowLater(error);
    }
  };

  #updateInterest(): void {
    if (this.#fd < 0 || this.#dead) return;
    try {
      this.#watch.set({ readable: this.#reader.wantsReadable, writable: this.#writer.blocked, hangup: this.#reader.wantsHangup });
    } catch (error) {
      process.nextTick(() => {
        if (this.#fd >= 0 && !this.#dead) this.#fatal(error as IoError);
      });
    }
  }

  #emitSafe(event: string, ...args: unknown[]): void {
    try {
      this.emit(event, ...args);
    } catch (error) {
      // A throwing listener (or an 'error' nobody listens to) must not unwind through the native callback.
      rethrowLater(error);
    }
  }
}
