// The ends root keeps of kept sessions whose units ended by themselves with nobody attached (issue 32):
// taken from a worker's 'kept-ended' report or, at the broker's start, read back from the kept store
// (each checked as untrusted), held until an ATTACH or STOP_SESSION takes one or its time is up, and
// bounded by limits.maxKept. The answers themselves are kept-ended.ts's.
import type { Logger } from '../log.ts';
import { boundEnded, checkEnded, endedExpired, type EndedRecord, type KeptStore } from '../kept-store/index.ts';
import type { SessionEntry } from '../protocol/index.ts';
import { sessionIdOf } from '../systemd/index.ts';
import { endedEntry, overBound } from './kept-ended.ts';

/** setTimeout's largest delay: a later expiry is waited for in steps. */
const MAX_TIMER_MS = 0x7fff_ffff;

/** Which ended sessions a principal reaches: as kept-sessions.ts KeptScope. */
export type EndScope = { sees: 'every' } | { sees: 'service'; service: string | undefined };

export interface KeptEndsDeps {
  /** Where ended records outlive the broker (absent: in memory only). */
  store?: Pick<KeptStore, 'endedIds' | 'readEnded' | 'removeEnded'>;
  unitPrefix: string;
  maxKept(): number;
  /** session.maxKeepMs now: no end is kept longer from now (boundEnded). */
  maxKeepMs(): number;
  log: Logger;
  now?(): number;
  /** The held ends changed (the broker's status, its idle look). */
  changed?(): void;
}

/** The worker that reports an end, as this module needs it. */
export interface EndReporter {
  unit: string | undefined;
  /** Its session was granted its keep (only a kept session's end is kept). */
  keepGranted: boolean;
}

export class KeptEnds {
  #deps: KeptEndsDeps;
  #ends = new Map<number, EndedRecord>();
  /** Who reported each end held (none for one read back at the start): only that worker's session does
   * its end answer for (reportedBy). */
  #reporters = new Map<number, EndReporter>();
  #timer: NodeJS.Timeout | undefined;

  constructor(deps: KeptEndsDeps) {
    this.#deps = deps;
  }

  get count(): number {
    return this.#ends.size;
  }

  has(id: number | undefined): boolean {
    return id !== undefined && this.#ends.has(id);
  }

  /** Whether `worker` reported the end held for `id`: its session is over, and the end answers for it. */
  reportedBy(id: number | undefined, worker: EndReporter): boolean {
    return id !== undefined && this.#ends.has(id) && this.#reporters.get(id) === worker;
  }

  /** At the broker's start: every ended record in the store that is valid and not past its time; the
   * rest are removed, each with a journal line. */
  load(): void {
    const { store, unitPrefix, log } = this.#deps;
    if (!store) return;
    for (const id of store.endedIds()) {
      const read = store.readEnded(id, unitPrefix);
      const held = 'why' in read ? read : this.#bound(read.ended);
      if ('why' in held) {
        log('notice', `kept session ${id}'s end is not kept: ${held.why}`);
        this.#forget(id);
      } else this.#ends.set(id, held.ended);
    }
    this.#settle();
  }

  /** A worker's 'kept-ended' for its kept session: held when it checks out (else logged and dropped). */
  add(value: unknown, worker: EndReporter): void {
    const { unit } = worker;
    const id = unit === undefined ? undefined : sessionIdOf(unit, this.#deps.unitPrefix);
    const checked = id === undefined ? { why: 'its worker names no session unit' } : !worker.keepGranted ? { why: 'its worker was granted no keep' } : checkEnded(value, id, this.#deps.unitPrefix);
    const held = 'why' in checked ? checked : this.#bound(checked.ended);
    if ('why' in held) return this.#deps.log('warning', `a kept session's end from ${unit ?? 'a worker'} is not kept: ${held.why}`);
    if (held.ended.session.unit !== unit) return this.#deps.log('warning', `a kept session's end from ${unit} names ${held.ended.session.unit}: not kept`);
    this.#ends.set(held.ended.session.sessionId, held.ended);
    this.#reporters.set(held.ended.session.sessionId, worker);
    this.#settle();
  }

  /**
   * Session `id` is live (a worker holds it, adopted: its helper answered as the unit's main process):
   * an end held for it is stale or forged (a legitimate one is written only once its unit is gone), and
   * is forgotten rather than answer for a running session.
   */
  live(id: number | undefined, worker: EndReporter): void {
    if (id === undefined || !this.#ends.has(id) || this.#reporters.get(id) === worker) return;
    this.#deps.log('warning', `kept session ${id}'s end is forgotten: the session is live`);
    this.#forget(id);
    this.#settle();
  }

  #bound(ended: EndedRecord): { ended: EndedRecord } | { why: string } {
    return boundEnded(ended, this.#now(), this.#deps.maxKeepMs());
  }

  /** LIST: the ended sessions `scope` reaches. */
  entries(scope: EndScope): SessionEntry[] {
    this.#sweep();
    return [...this.#ends.values()].filter((ended) => inScope(ended, scope)).map(endedEntry);
  }

  /** ATTACH or STOP_SESSION: the ended session `id` within `scope`, forgotten as it is answered. */
  take(id: number, scope: EndScope): EndedRecord | undefined {
    this.#sweep();
    const ended = this.#ends.get(id);
    if (!ended || !inScope(ended, scope)) return undefined;
    this.#forget(id);
    this.#settle();
    return ended;
  }

  /** Removes what is past its time and what is over the bound, then waits for the next expiry. */
  #settle(): void {
    this.#sweep();
    for (const ended of overBound(this.#ends.values(), this.#deps.maxKept())) {
      this.#deps.log('notice', `kept session ${ended.session.unit}'s end is forgotten: more ended sessions than limits.maxKept (${this.#deps.maxKept()})`);
      this.#forget(ended.session.sessionId);
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const first = Math.min(...[...this.#ends.values()].map((ended) => ended.untilMs));
    if (Number.isFinite(first)) {
      this.#timer = setTimeout(() => this.#settle(), Math.min(MAX_TIMER_MS, Math.max(0, first - this.#now())));
      // The broker may exit idle meanwhile: the next one reads the store and drops what is past its time.
      this.#timer.unref();
    }
    this.#deps.changed?.();
  }

  #sweep(): void {
    const now = this.#now();
    for (const [id, ended] of this.#ends) if (endedExpired(ended, now)) this.#forget(id);
  }

  #forget(id: number): void {
    this.#ends.delete(id);
    this.#reporters.delete(id);
    try {
      this.#deps.store?.removeEnded(id);
    } catch (error) {
      this.#deps.log('warning', `kept session ${id}'s ended record could not be removed: ${(error as Error).message}`);
    }
  }

  #now(): number {
    return this.#deps.now?.() ?? Date.now();
  }

  /** Stops its timer (the broker's end). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function inScope(ended: EndedRecord, scope: EndScope): boolean {
  return scope.sees === 'every' || (ended.session.service !== null && ended.session.service === scope.service);
}
