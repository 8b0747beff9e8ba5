// Accepting from the listening socket: batches of connections with their SO_PEERCRED in one native
// call, served in accept-order.ts's order; those refused from what is known already (a wrong account,
// a peer the refusal memo knows) are refused at once, and the full checks (a pidfd, /proc reads, maybe
// a D-Bus read) are bounded per readable event, so a flood can neither fill the kernel's queue while
// the broker still has time nor starve the rest of the event loop; accept-backoff.ts when accept(2)
// itself fails.
import { deferredDrains } from '../io/index.ts';
import type { Logger } from '../log.ts';
import { type FdWatcher, native } from '../native/index.ts';
import { AcceptBackoff } from './accept-backoff.ts';
import { type AcceptedConnection, acceptedConnections, fromMainPid, serveOrder } from './accept-order.ts';

/**
 * Full checks started per readable event. Every step of an admitted connection (its HELLO, the bus's
 * replies, the worker's messages) waits behind one event's work, and a full check that ends in a
 * refusal cost ≈150 µs: under a flood 64 made each step of the agent's start wait up to ≈10 ms
 * (accept → gate decided 16 ms at p90, measured); 8 bound it near 1 ms.
 */
export const CHECKS_PER_EVENT = 8;
/** Connections taken from the kernel per native call. */
export const ACCEPT_BATCH = 64;
/** Connections taken per readable event in all. A refusal from what is known costs 10–20 µs, so an
 * event's work stays under ≈10 ms; under a flood connecting and closing as fast as it can (30,000–
 * 40,000 a second), 64 an event let the queue fill now and then (`EAGAIN` for 1% of the flood's
 * connects, which the agent's connect would meet too), 512 never did (test/torture/inside-flood.ts). */
export const ACCEPTS_PER_EVENT = 512;
/** Connections accepted whose full checks wait for a later event; accepting pauses at this many
 * (one batch more at most), leaving the rest in the kernel's queue. */
export const MAX_WAITING_CHECKS = 64;

/** What the loop asks of the broker for each connection. */
export interface AcceptHandler {
  /** Decides at once when nothing needs to be waited for (a refusal from what is known): true when
   * `connection` is dealt with, false when it needs the full checks. */
  quick(connection: AcceptedConnection): boolean;
  /** Starts the full checks (accept-gate.ts); `connection` is the handler's from here. */
  check(connection: AcceptedConnection): void;
  /** A connection accepted but not checked when the loop closes: refused (shutdown). */
  drop(connection: AcceptedConnection): void;
  /** The serving order's hints: the client service's MainPID as last read, and the client's uid. */
  order(): { mainPid: number | undefined; clientUid: number };
  /** Once after each event's connections (status, idle timer). */
  afterEvent?(): void;
}

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
  #handler: AcceptHandler;
  #backoff: AcceptBackoff;
  #watcher: FdWatcher | undefined;
  #closed = false;
  /** Accepted, in serving order, their full checks not yet started (at most MAX_WAITING_CHECKS). */
  #waiting: AcceptedConnection[] = [];
  #resumeScheduled = false;

  #backlog: () => string | undefined;

  /** `backlog`: closeBacklog, unless a test gives its own. */
  constructor(fd: number, handler: AcceptHandler, log: Logger, backlog: () => string | undefined = closeBacklog) {
    this.#fd = fd;
    this.#backlog = backlog;
    this.#handler = handler;
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
    for (const connection of this.#waiting.splice(0)) this.#handler.drop(connection);
  }

  #acceptSome(): void {
    let checks = this.#checkWaiting(CHECKS_PER_EVENT);
    let accepted = 0;
    while (accepted < ACCEPTS_PER_EVENT && this.#waiting.length < MAX_WAITING_CHECKS && !this.#closed) {
      let raw: Int32Array;
      try {
        const backlog = this.#backlog();
        if (backlog !== undefined) throw Object.assign(new Error(backlog), { code: 'ECLOSEBACKLOG' });
        raw = native().acceptBatch(this.#fd, ACCEPT_BATCH);
      } catch (error) {
        // EMFILE and the like leave the connection queued: pause and retry later, not at once.
        if (this.#backoff.failed(error)) break;
        continue;
      }
      if (raw.length === 0) break;
      this.#backoff.succeeded();
      const batch = acceptedConnections(raw);
      accepted += batch.length;
      const { mainPid, clientUid } = this.#handler.order();
      for (const connection of serveOrder(batch, mainPid, clientUid)) {
        if (this.#closed) {
          this.#handler.drop(connection);
          continue;
        }
        if (this.#handler.quick(connection)) continue;
        // The agent's own connection never waits behind the flood's checks: it is checked at once.
        if (fromMainPid(connection, mainPid, clientUid)) this.#handler.check(connection);
        else if (checks < CHECKS_PER_EVENT) {
          checks += 1;
          this.#handler.check(connection);
        } else this.#waiting.push(connection);
      }
      if (batch.length < ACCEPT_BATCH) break;
    }
    this.#handler.afterEvent?.();
    // Checks left waiting go on in the next turn even if nothing new arrives (the socket is then not readable).
    if (this.#waiting.length > 0) this.#scheduleWaiting();
  }

  /** Starts up to `budget` waiting checks, in order; returns how many. */
  #checkWaiting(budget: number): number {
    let started = 0;
    while (started < budget && this.#waiting.length > 0 && !this.#closed) {
      started += 1;
      this.#handler.check(this.#waiting.shift()!);
    }
    return started;
  }

  #scheduleWaiting(): void {
    if (this.#resumeScheduled) return;
    this.#resumeScheduled = true;
    setImmediate(() => {
      this.#resumeScheduled = false;
      if (this.#closed) return;
      this.#checkWaiting(CHECKS_PER_EVENT);
      if (this.#waiting.length > 0) this.#scheduleWaiting();
    });
  }
}
