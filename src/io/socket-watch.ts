// The one native watcher of an FdSocket: made at the first interest, told only what changed, stopped before its fd
// is closed.
import { type FdWatcher, native, type PollEvents } from '../native/index.ts';
import { fromSystemError } from './io-error.ts';

export interface Interest {
  readable: boolean;
  writable: boolean;
  /** POLLRDHUP: the peer shut its writing side or closed. */
  hangup: boolean;
}

export class SocketWatch {
  readonly #fd: number;
  readonly #onEvents: (events: PollEvents) => void;
  #watcher: FdWatcher | undefined;
  /** The interest the watcher has, so an unchanged one costs no native call. */
  #key = '';

  constructor(fd: number, onEvents: (events: PollEvents) => void) {
    this.#fd = fd;
    this.#onEvents = onEvents;
  }

  /** Throws an IoError (syscall 'poll') when the watcher cannot be made or changed; the next call tries again. */
  set(interest: Interest): void {
    const { readable, writable, hangup } = interest;
    const key = `${+readable}${+writable}${+hangup}`;
    if (key === this.#key) return;
    this.#key = key;
    try {
      if (this.#watcher) this.#watcher.update({ readable, writable, hangup });
      else if (readable || writable || hangup) {
        this.#watcher = native().watch(this.#fd, { readable, writable, hangup }, this.#onEvents);
      }
    } catch (error) {
      this.#key = '';
      throw fromSystemError(error, 'poll');
    }
  }

  /** Must run before the fd is closed: a later fd with the same number must not be polled. */
  close(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
