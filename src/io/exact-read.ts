// One frame-exact read in progress: recvmsg never past the bytes asked for, fds gathered across partial reads.
import { native } from '../native/index.ts';
import { closeReceived } from './fds.ts';
import { IoError, fromSystemError } from './io-error.ts';

export interface ExactRead {
  data: Buffer;
  /** Every fd that arrived on these bytes; the caller owns (and must close) them and checks their count. */
  fds: number[];
  /** The kernel had more control data than fit (so it dropped, and closed, some fds). */
  controlTruncated: boolean;
  /** A control message other than SCM_RIGHTS arrived (and was discarded). */
  foreignControl: boolean;
}

export class ExactRequest {
  readonly #buffer: Buffer;
  readonly #maxFds: number;
  #got = 0;
  #fds: number[] = [];
  #controlTruncated = false;
  #foreignControl = false;
  readonly #resolve: (read: ExactRead) => void;
  readonly #reject: (error: IoError) => void;

  constructor(n: number, maxFds: number, resolve: (read: ExactRead) => void, reject: (error: IoError) => void) {
    this.#buffer = Buffer.alloc(n);
    this.#maxFds = maxFds;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Reads what is there without blocking. 'pending': wait for readability. 'eof': rejected with EOF (the
   * stream is over). 'done': settled otherwise (resolved, or rejected with a syscall error). */
  step(fd: number): 'pending' | 'done' | 'eof' {
    while (this.#got < this.#buffer.length) {
      let message;
      try {
        // Control space shrinks as fds arrive (the addon keeps room for one so a stray fd is seen, not dropped).
        const room = Math.max(0, this.#maxFds - this.#fds.length);
        message = native().recvmsg(fd, this.#buffer, this.#got, this.#buffer.length - this.#got, room);
      } catch (error) {
        this.fail(fromSystemError(error, 'recvmsg'));
        return 'done';
      }
      if (message === null) return 'pending';
      this.#fds.push(...message.fds);
      this.#controlTruncated ||= message.controlTruncated;
      this.#foreignControl ||= message.foreignControl;
      if (message.bytes === 0) {
        this.fail(new IoError('EOF', `the peer closed after ${this.#got} of ${this.#buffer.length} bytes`));
        return 'eof';
      }
      this.#got += message.bytes;
    }
    const { controlTruncated, foreignControl } = this;
    this.#resolve({ data: this.#buffer, fds: this.#fds, controlTruncated, foreignControl });
    return 'done';
  }

  get controlTruncated(): boolean {
    return this.#controlTruncated;
  }

  get foreignControl(): boolean {
    return this.#foreignControl;
  }

  /** Rejects, closing every fd received so far. */
  fail(error: IoError): void {
    closeReceived(this.#fds);
    this.#fds = [];
    this.#reject(error);
  }
}
