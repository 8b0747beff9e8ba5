// The sending half of an FdSocket: a bounded queue flushed with sendmsg as far as the kernel takes it.
import { native } from '../native/index.ts';
import { closeAll } from './fds.ts';
import { IoError, fromSystemError } from './io-error.ts';
import { WriteQueue } from './write-queue.ts';

/** Urgent frames are small control frames; they may exceed the data bound by this much, never more. */
const URGENT_HEADROOM = 64 * 1024;

export interface WriterHooks {
  /** The kernel refused more (watch for writability) or took everything (stop watching). */
  blockedChanged(): void;
  /** A queue that had to wait for the kernel is empty. */
  drained(): void;
  /** sendmsg failed; the queue is dropped and later writes are discarded. */
  failed(error: IoError): void;
}

export class SocketWriter {
  readonly #fd: number;
  readonly #max: number;
  readonly #hooks: WriterHooks;
  #queue = new WriteQueue();
  #blocked = false;
  #failed = false;
  #failure: IoError | undefined;

  constructor(fd: number, maxQueued: number, hooks: WriterHooks) {
    this.#fd = fd;
    this.#max = maxQueued;
    this.#hooks = hooks;
  }

  get blocked(): boolean {
    return this.#blocked;
  }

  get bytes(): number {
    return this.#queue.bytes;
  }

  get max(): number {
    return this.#max;
  }

  /** Why sendmsg failed, once it has: nothing more is sent, and what was queued (fds included) is closed. */
  get failure(): IoError | undefined {
    return this.#failure;
  }

  /** See FdSocket.write. */
  write(data: Buffer, fds: number[]): void {
    if (fds.length > 0 && data.length === 0) throw new TypeError('fds need at least one byte to ride on');
    this.#checkBound(data.length, this.#max);
    if (this.#failed) return closeAll(fds);
    if (data.length === 0) return;
    this.#queue.push(data, fds);
    if (!this.#blocked) this.flush();
  }

  writeUrgent(data: Buffer): void {
    this.#checkBound(data.length, this.#max + URGENT_HEADROOM);
    if (this.#failed || data.length === 0) return;
    this.#queue.pushUrgent(data);
    if (!this.#blocked) this.flush();
  }

  /** Sends until the queue is empty or the kernel would block. One sendmsg per queued write, never two
   * writes in one: an fd-carrying write then goes out whole with its fds whenever the kernel has room. */
  flush(): void {
    for (let chunk = this.#queue.peek(); chunk; chunk = this.#queue.peek()) {
      let sent: number;
      try {
        const fds = chunk.fds.length > 0 ? chunk.fds : undefined;
        sent = native().sendmsg(this.#fd, chunk.data, chunk.offset, chunk.data.length - chunk.offset, fds);
      } catch (error) {
        this.drop();
        this.#failure = fromSystemError(error, 'sendmsg');
        this.#hooks.failed(this.#failure);
        return;
      }
      if (sent <= 0) return this.#setBlocked(true);
      // The kernel holds its own references to fds in flight: our copies are closed now.
      closeAll(this.#queue.consume(sent));
    }
    const wasBlocked = this.#blocked;
    this.#setBlocked(false);
    if (wasBlocked) this.#hooks.drained();
  }

  /** See FdSocket.discardQueued. */
  discardUnstarted(): void {
    closeAll(this.#queue.discardUnstarted());
  }

  /** Drops the queue (closing fds never sent); later writes are discarded. */
  drop(): void {
    this.#failed = true;
    closeAll(this.#queue.clear());
    this.#setBlocked(false);
  }

  #checkBound(adding: number, bound: number): void {
    if (this.#queue.bytes + adding > bound) {
      throw new IoError('QUEUE_FULL', `write queue bound of ${this.#max} bytes reached`);
    }
  }

  #setBlocked(blocked: boolean): void {
    if (this.#blocked === blocked) return;
    this.#blocked = blocked;
    this.#hooks.blockedChanged();
  }
}
