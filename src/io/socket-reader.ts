// The receiving half of an FdSocket: one read at a time (frame-exact, a peek, or streaming), and the end of the
// peer's sending side (EOF, hang-up), each reported once.
import { native } from '../native/index.ts';
import { ExactRequest, type ExactRead } from './exact-read.ts';
import { IoError, fromSystemError } from './io-error.ts';
import { rethrowLater } from './rethrow-later.ts';
import { readChunk, type StreamRead } from './stream-read.ts';

/** Where a peek puts its byte: read at once, before anything else can peek (one thread). */
const PEEKED = Buffer.alloc(1);
/** Reads per readable event before yielding: uv_poll is level-triggered, so the rest comes on the next turn. */
const READS_PER_EVENT = 16;

export interface ReaderHooks {
  /** What the reader waits for changed: the socket recomputes its watcher's interest. */
  interestChanged(): void;
  /** Emits on the socket; a throwing listener never unwinds through the reader. */
  emit(event: 'hangup' | 'end'): void;
  /** Emits 'error': control data arrived on a stream, whose reading stopped. */
  error(error: IoError): void;
  /** A streaming read failed: nothing on this socket can progress any more. */
  fatal(error: IoError): void;
}

export class SocketReader {
  readonly #fd: number;
  readonly #hooks: ReaderHooks;
  readonly #readBufferSize: number;
  /** close() ran: the fd is no longer ours to read. */
  #closed = false;
  #exact: ExactRequest | undefined;
  /** A peekByte() waiting for the first queued byte. */
  #peek: { resolve(byte: number): void; reject(error: IoError): void } | undefined;
  #onData: ((chunk: Buffer) => void) | undefined;
  #paused = false;
  /** EOF was read: nothing more will ever be readable. */
  #ended = false;
  #hangupReported = false;
  /** A streaming read's buffer, made at the first streaming read: most of the broker's sockets only
   * read frame-exact or peek, and 64 KiB for each of them was garbage (docs/testing.md, the broker's RSS). */
  #scratch: Buffer | undefined;

  constructor(fd: number, readBufferSize: number, hooks: ReaderHooks) {
    this.#fd = fd;
    this.#readBufferSize = readBufferSize;
    this.#hooks = hooks;
  }

  /** A frame-exact read or a stream is in progress (a second one is refused with BUSY). */
  get busy(): boolean {
    return this.#exact !== undefined || this.#onData !== undefined;
  }

  get peeking(): boolean {
    return this.#peek !== undefined;
  }

  /** Something still reads the peer's bytes: a peer gone is theirs to report, after what it sent. */
  get reading(): boolean {
    return this.#exact !== undefined || (this.#onData !== undefined && !this.#ended);
  }

  get ended(): boolean {
    return this.#ended;
  }

  get hungUp(): boolean {
    return this.#hangupReported;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** The watcher's read interest: a read waits, or a stream flows. */
  get wantsReadable(): boolean {
    return this.#exact !== undefined || this.#peek !== undefined || (this.#onData !== undefined && !this.#paused && !this.#ended);
  }

  /** Level-triggered: once reported, POLLRDHUP would fire on every turn, so it is watched only until then. */
  get wantsHangup(): boolean {
    return !this.#hangupReported && !this.#ended;
  }

  startExact(n: number, maxFds: number, resolve: (read: ExactRead) => void, reject: (error: IoError) => void): void {
    this.#exact = new ExactRequest(n, maxFds, resolve, reject);
    this.#readExactStep();
  }

  startPeek(resolve: (byte: number) => void, reject: (error: IoError) => void): void {
    this.#peek = { resolve, reject };
    this.#peekStep();
  }

  /** Throws BUSY when a read is in progress. */
  startStream(onData: (chunk: Buffer) => void): void {
    if (this.busy) throw new IoError('BUSY', 'a read is already in progress');
    this.#onData = onData;
    this.#paused = false;
  }

  setPaused(paused: boolean): void {
    this.#paused = paused;
  }

  /** The watcher saw the peer hang up: reported once. False when it was reported already. */
  noteHangup(): boolean {
    if (this.#hangupReported) return false;
    this.#hangupReported = true;
    this.#hooks.interestChanged();
    this.#hooks.emit('hangup');
    return true;
  }

  /** The fd is readable: the read in progress takes what is there. */
  onReadable(): void {
    if (this.#exact) this.#readExactStep();
    else if (this.#peek) this.#peekStep();
    else this.#readStream();
  }

  /** The peer reset the connection: deliver what it sent before, even while paused (bounded by its
   * socket buffer), so nothing it wrote is lost; stops at EOF, at the reset error, or when blocked. */
  readAfterReset(): void {
    if (this.#peek) this.#peekStep();
    while (!this.#closed && !this.#ended) {
      if (this.#exact) {
        this.#readExactStep();
        if (this.#exact) return;
        continue;
      }
      const onData = this.#onData;
      if (!onData) return;
      let read: StreamRead;
      try {
        read = readChunk(this.#fd, (this.#scratch ??= Buffer.allocUnsafe(this.#readBufferSize)));
      } catch {
        return;
      }
      if (read.kind === 'blocked' || read.kind === 'control') return;
      if (read.kind === 'eof') {
        this.#ended = true;
        if (!this.#hangupReported) {
          this.#hangupReported = true;
          this.#hooks.emit('hangup');
        }
        this.#hooks.emit('end');
        return;
      }
      try {
        onData(read.chunk);
      } catch (error) {
        rethrowLater(error);
      }
    }
  }

  /** No more streaming: the socket failed. */
  stopStreaming(): void {
    this.#onData = undefined;
  }

  /** Fails a pending frame-exact read and peek with `error` (closing fds received so far). */
  fail(error: IoError): void {
    const exact = this.#exact;
    this.#exact = undefined;
    exact?.fail(error);
    const peek = this.#peek;
    this.#peek = undefined;
    peek?.reject(error);
  }

  /** The socket closed: reads stop and pending ones fail with CLOSED. */
  close(): void {
    this.#closed = true;
    this.#onData = undefined;
    const exact = this.#exact;
    this.#exact = undefined;
    exact?.fail(new IoError('CLOSED', 'socket closed'));
    const peek = this.#peek;
    this.#peek = undefined;
    peek?.reject(new IoError('CLOSED', 'socket closed'));
  }

  #readExactStep(): void {
    const request = this.#exact;
    if (!request) return;
    const outcome = request.step(this.#fd);
    if (outcome === 'pending') return;
    this.#exact = undefined;
    if (outcome === 'eof') this.#ended = true;
  }

  #peekStep(): void {
    const request = this.#peek;
    if (!request || this.#closed) return;
    let got: number;
    try {
      got = native().peek(this.#fd, PEEKED, 0, 1);
    } catch (error) {
      this.#peek = undefined;
      return request.reject(fromSystemError(error, 'recv'));
    }
    if (got < 0) return;
    this.#peek = undefined;
    if (got === 0) {
      this.#ended = true;
      return request.reject(new IoError('EOF', 'the peer closed the connection'));
    }
    request.resolve(PEEKED[0]!);
  }

  #readStream(): void {
    for (let i = 0; i < READS_PER_EVENT; i += 1) {
      const onData = this.#onData;
      if (!onData || this.#paused || this.#closed || this.#ended) return;
      let read: StreamRead;
      try {
        read = readChunk(this.#fd, (this.#scratch ??= Buffer.allocUnsafe(this.#readBufferSize)));
      } catch (error) {
        return this.#hooks.fatal(error as IoError);
      }
      switch (read.kind) {
        case 'blocked':
          return;
        case 'control':
          this.#onData = undefined;
          this.#hooks.interestChanged();
          return this.#hooks.error(new IoError(read.code, 'control data arrived on a data stream; reading stopped'));
        case 'eof':
          this.#ended = true;
          this.#hooks.interestChanged();
          if (!this.#hangupReported) {
            this.#hangupReported = true;
            this.#hooks.emit('hangup');
          }
          return this.#hooks.emit('end');
        case 'data':
          try {
            onData(read.chunk);
          } catch (error) {
            rethrowLater(error);
          }
      }
    }
  }
}
