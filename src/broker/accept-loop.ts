// Accepting from the listening socket: a bounded batch per readable event, so a flood cannot starve
// the rest of the event loop, and accept-backoff.ts when accept(2) itself fails.
import { deferredDrains } from '../io/peer-close.ts';
import type { Logger } from '../log.ts';
import { native, type FdWatcher } from '../native/binding.ts';
import { AcceptBackoff } from './accept-backoff.ts';

/**
 * Connections accepted per readable event before yielding to the event loop. Every step of an
 * admitted connection (its HELLO, the bus's replies, the worker's messages) waits behind one such
 * batch, and a refusal costs ≈150 µs: under a flood 64 made each step of the agent's start wait up to
 * ≈10 ms (accept → gate decided 16 ms at p90, measured); 8 bound it near 1 ms, for one more epoll_wait
 * per 8 connections.
 */
const ACCEPTS_PER_EVENT = 8;

/**
 * Refused connections whose drain waits for the close pool (peer-close.ts) at which accepting pauses, as
 * for EMFILE: each holds one descriptor until its drain is done, and only close threads held for good
 * (a FUSE file system that never answers, kernels before 6.16) keep them waiting, so without a bound
 * a peer could fill the broker's descriptor table with them.
 */
export const MAX_DEFERRED_DRAINS = 4096;

export class AcceptLoop {
  #fd: number;
  #onConnection: (fd: number) => void;
  #backoff: AcceptBackoff;
  #watcher: FdWatcher | undefined;
  #closed = false;

  #drainsWaiting: () => number;

  /** `drainsWaiting`: peer-close.ts's deferredDrains, unless a test gives its own count. */
  constructor(fd: number, onConnection: (fd: number) => void, log: Logger, drainsWaiting: () => number = deferredDrains) {
    this.#fd = fd;
    this.#drainsWaiting = drainsWaiting;
    this.#onConnection = onConnection;
    this.#backoff = new AcceptBackoff(
      {
        pause: () => this.#watcher?.update({}),
        resume: () => {
          if (!this.#closed) this.#watcher?.update({ readable: true });
        },
      },
      log,
    );
  }

  start(): void {
    this.#watcher = native().watch(this.#fd, { readable: true }, () => this.#acceptSome());
  }

  /** Accepts nothing more; connections still queued stay with the socket (systemd's, when it passed it). */
  close(): void {
    this.#closed = true;
    this.#backoff.close();
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  #acceptSome(): void {
    for (let i = 0; i < ACCEPTS_PER_EVENT && !this.#closed; i += 1) {
      let fd: number;
      try {
        const waiting = this.#drainsWaiting();
        if (waiting >= MAX_DEFERRED_DRAINS) throw drainsWaiting(waiting);
        fd = native().accept(this.#fd);
      } catch (error) {
        // EMFILE and the like leave the connection queued: pause and retry later, not at once.
        if (this.#backoff.failed(error)) return;
        continue;
      }
      if (fd < 0) return;
      this.#backoff.succeeded();
      this.#onConnection(fd);
    }
  }
}

function drainsWaiting(count: number): Error {
  return Object.assign(new Error(`${count} closed connections wait for the descriptors they queued to be closed (every close thread held)`), { code: 'EDRAINWAIT' });
}
