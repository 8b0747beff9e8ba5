// Session slots: at most `max` sessions (and orphaned units being stopped) at once. A pure policy
// over counts: each slot taken is a handle released once; a slot whose session is finishing (its end
// decided, its last frame going out, its unit being stopped and collected) is about to come free, so a
// start that finds every slot held may wait for it rather than be refused (docs/protocol.md).
//
// One more slot is kept for the client service's MainPID, as admission keeps one (admission.ts): when
// every slot is held and some are other processes' (the agent's children), the MainPID's start takes
// it instead of being refused, so a flood of sessions from the agent's own tools cannot lock the agent
// out. The MainPID alone never holds more than `max`: the seeds' limit stays its limit.

/** How long a start that finds every slot held, none finishing, watches for one to turn finishing: a
 * client's kill() then spawn() sends its STOP through helper and worker while the start comes straight
 * to the broker, and the start must not be refused for the few ms the STOP takes (docs/architecture.md). */
export const STOP_IN_FLIGHT_MS = 1000;

/** One held session slot. */
export interface SessionSlot {
  /** Its session's end is decided (its last frame on its way): the slot comes free soon. Once only. */
  finishing(): void;
  /** Frees it, or hands it straight to the first waiter. Later calls do nothing. */
  release(): void;
}

/** Whose start a slot is for: the client service's MainPID, or any other process (the hint the
 * broker has at hand: only the reserved slot needs a confirmed look). */
export type SlotOwner = 'main' | 'other';

/** A start waiting for a finishing slot: given one, or refused (resolved with nothing). */
interface Waiter {
  owner: SlotOwner;
  give(slot: SessionSlot): void;
  refuse(): void;
}

export class SessionSlots {
  #max: number;
  #used = 0;
  #finishing = 0;
  /** Held slots that are the MainPID's, the reserved one included. */
  #mainHeld = 0;
  #reserveHeld = false;
  /** First come, first served; never more of them than slots finishing, and only while all are held. */
  #waiters: Waiter[] = [];
  /** Starts that found no finishing slot to count on, watching a short while for one (`take`'s settleMs). */
  #watchers = new Set<() => void>();

  constructor(max: number) {
    this.#max = max;
  }

  /** A free slot, taken at once, or nothing when every slot is held. */
  tryTake(owner: SlotOwner = 'other'): SessionSlot | undefined {
    if (this.#used >= this.#max) return undefined;
    this.#used += 1;
    return this.#slot(owner);
  }

  /** Whether the reserved slot could be taken now: every slot held, some by other processes, and it free. */
  get reserveOpen(): boolean {
    return this.#used >= this.#max && !this.#reserveHeld && this.#mainHeld < this.#max;
  }

  /** The slot kept for the MainPID (the caller has confirmed the peer is it), or nothing when
   * `reserveOpen` is false. Released like any other, but never handed to a waiter: it is nobody else's. */
  tryTakeReserved(): SessionSlot | undefined {
    if (!this.reserveOpen) return undefined;
    this.#reserveHeld = true;
    this.#mainHeld += 1;
    let released = false;
    return {
      finishing: () => undefined,
      release: () => {
        if (released) return;
        released = true;
        this.#reserveHeld = false;
        this.#mainHeld -= 1;
      },
    };
  }

  /**
   * A free slot now; else, while a held slot is finishing that no earlier waiter already counts on,
   * the next slot released (whichever it is). Nothing, and nothing taken, when none is or once
   * `until` aborts. With `settleMs`, a start that finds no finishing slot to count on first watches
   * that long for one (#settle). A slot given is the caller's to release, even if `until` aborted meanwhile.
   */
  take(until: AbortSignal, settleMs = 0, owner: SlotOwner = 'other'): Promise<SessionSlot | undefined> {
    const free = this.tryTake(owner);
    if (free) return Promise.resolve(free);
    if (until.aborted) return Promise.resolve(undefined);
    if (this.#waiters.length >= this.#finishing) return settleMs > 0 ? this.#settle(until, settleMs, owner) : Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        owner,
        give: (slot) => {
          until.removeEventListener('abort', waiter.refuse);
          resolve(slot);
        },
        refuse: () => {
          until.removeEventListener('abort', waiter.refuse);
          const at = this.#waiters.indexOf(waiter);
          if (at >= 0) this.#waiters.splice(at, 1);
          resolve(undefined);
          // The finishing slot it counted on is free to count on for a start still watching.
          if (at >= 0) this.#changed();
        },
      };
      until.addEventListener('abort', waiter.refuse, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** No finishing slot to count on yet: a session's STOP may be on its way (client → helper → worker →
   * broker, while the start came straight here). Up to `settleMs`, each change (a slot turning
   * finishing or coming free) is looked at in the same turn: a slot or a waiter's place taken then ends
   * the watch; a change another watcher took does not, since a second removal's STOP may be just behind
   * the first. At the window's end, one more look (without a second wait): a waiter's place, a slot, or nothing. */
  #settle(until: AbortSignal, settleMs: number, owner: SlotOwner): Promise<SessionSlot | undefined> {
    return new Promise((resolve) => {
      let ended = false;
      // Once: a second take for the same start would hold a slot or a waiter's place nobody releases.
      const end = (result: () => Promise<SessionSlot | undefined>) => {
        if (ended) return;
        ended = true;
        clearTimeout(timer);
        this.#watchers.delete(look);
        until.removeEventListener('abort', abort);
        resolve(result());
      };
      const look = () => {
        if (this.#used < this.#max || this.#waiters.length < this.#finishing) end(() => this.take(until, 0, owner));
      };
      const abort = () => end(async () => undefined);
      const timer = setTimeout(() => end(() => this.take(until, 0, owner)), settleMs);
      this.#watchers.add(look);
      until.addEventListener('abort', abort, { once: true });
    });
  }

  /** Starts watching for a finishing slot (`take`'s settleMs). */
  get watching(): number {
    return this.#watchers.size;
  }

  #changed(): void {
    for (const watcher of [...this.#watchers]) watcher();
  }

  /** The limit (config limits.maxSessions). */
  get max(): number {
    return this.#max;
  }

  get used(): number {
    return this.#used;
  }

  /** Held slots whose session is finishing. */
  get finishing(): number {
    return this.#finishing;
  }

  /** Starts waiting for a finishing slot. */
  get waiting(): number {
    return this.#waiters.length;
  }

  #slot(owner: SlotOwner): SessionSlot {
    let state: 'held' | 'finishing' | 'released' = 'held';
    if (owner === 'main') this.#mainHeld += 1;
    return {
      finishing: () => {
        if (state !== 'held') return;
        state = 'finishing';
        this.#finishing += 1;
        this.#changed();
      },
      release: () => {
        if (state === 'released') return;
        if (state === 'finishing') this.#finishing -= 1;
        if (owner === 'main') this.#mainHeld -= 1;
        state = 'released';
        this.#handOn();
      },
    };
  }

  /** A slot released goes to the first waiter, else it is free. Each release takes one waiter and at
   * most one finishing slot, so there are never more waiters than slots they can count on. */
  #handOn(): void {
    const next = this.#waiters.shift();
    if (next) next.give(this.#slot(next.owner));
    else this.#used -= 1;
    // Either way a watcher may now count on something: a free slot, or (the slot given was not a
    // finishing one) a finishing slot no waiter counts on any more.
    this.#changed();
  }
}
