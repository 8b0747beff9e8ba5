// Accepting from the listening socket: a bounded batch per readable event, so a flood cannot starve
// the rest of the event loop, and accept-backoff.ts when accept(2) itself fails.
import { deferredDrains } from '../io/index.ts';
import type { Logger } from '../log.ts';
import { type FdWatcher, native } from '../native/index.ts';
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
 * Closed connections whose drain waits for the close pool (peer-close.ts) at which accepting pauses, as
 * for EMFILE: each holds one descriptor until its drain is done. Accepting pauses too while the pool's
 * queue is long (closeThreads().maxQueued): every descriptor in it is open in our table, and the
 * reads of new connections would add to it. Only close threads held for good (a FUSE file system that
 * never answers) keep either growing; without the bound a peer could fill the descriptor table, where
 * a read releases what it cannot install in the reading thread (scm_detach_fds).
 */
export const MAX_DEFERRED_DRAINS = 4096;

/** Why accepting must wait for the close pool, or undefined. */
export function closeBacklog(): string | undefined {
  const drains = deferredDrains();
  if (drains >= MAX_DEFERRED_DRAINS) return `${drains} closed connections wait for the descriptors they queued to be closed (the close threads are held)`;
  const { queued, maxQueued } = native().closeThreads();
  if (queued >= maxQueued) return `${queued} received descriptors wait for a close thread (the close threads are held)`;
  return undefined;
}

export class AcceptLoop {
  #fd: number;
  #onConnection: (fd: number) => void;
  #backoff: AcceptBackoff;
  #watcher: FdWatcher | undefined;
  #closed = false;

  #backlog: () => string | undefined;

  /** `backlog`: closeBacklog, unless a test gives its own. */
  constructor(fd: number, onConnection: (fd: number) => void, log: Logger, backlog: () => string | undefined = closeBacklog) {
    this.#fd = fd;
    this.#backlog = backlog;
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
        const backlog = this.#backlog();
        if (backlog !== undefined) throw Object.assign(new Error(backlog), { code: 'ECLOSEBACKLOG' });
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
