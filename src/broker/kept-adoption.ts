// Kept sessions whose worker is gone (an earlier broker's, or a worker of ours that died): each one with a
// valid record (kept-store) is given to a new worker, which reaches its helper through the rendezvous
// and holds it as a detached kept session; the rest are orphans (orphans.ts). docs/architecture.md
// "Kept sessions across the supervisor".
import type { KeptRecord, KeptStore } from '../kept-store/index.ts';
import type { Logger } from '../log.ts';
import { sessionIdOf } from '../systemd/index.ts';
import type { KeptSessions } from './kept-sessions.ts';
import type { SessionSlot, SessionSlots } from './session-slots.ts';
import type { WorkerHandle } from './worker-handle.ts';

export interface AdoptionDeps {
  store: KeptStore;
  unitPrefix: string;
  takeWorker(): Promise<WorkerHandle>;
  slots: Pick<SessionSlots, 'tryTake'>;
  kept: Pick<KeptSessions<WorkerHandle>, 'adopting'>;
  /** The session lives in `worker` from now on (LiveSessions.adopt). */
  hold(worker: WorkerHandle, slot: SessionSlot, service: string | undefined): void;
  /** The session could not be given to a worker: stopped as an orphan is. */
  reap(unit: string, why: string): void;
  log: Logger;
  /** An adoption has settled (held, or reaped): the broker looks again at whether it is idle. */
  settled?(): void;
}

/** Workers asked in turn to take an adoption before the session is reaped. */
const HANDOVER_ATTEMPTS = 3;

/** A slot for a session that holds none: kept sessions are within limits.maxSessions when they started,
 * but one the slots cannot count (a smaller limit since) is still adopted, never stopped for it. */
const UNCOUNTED: SessionSlot = { finishing: () => undefined, release: () => undefined };

export class KeptAdoption {
  #deps: AdoptionDeps;
  #adopting = new Set<string>();

  constructor(deps: AdoptionDeps) {
    this.#deps = deps;
  }

  /** `unit`'s record, when its session may be adopted; else why not (for the orphan's journal line). */
  judge(unit: string): { record: KeptRecord } | { why: string } {
    const id = sessionIdOf(unit, this.#deps.unitPrefix);
    if (id === undefined) return { why: 'its name is not a session id' };
    return this.#deps.store.read(unit, id, this.#deps.unitPrefix);
  }

  has(unit: string): boolean {
    return this.#adopting.has(unit);
  }

  /** Adoptions under way: the broker is not idle while one is (its session may be kept for hours). */
  get pending(): number {
    return this.#adopting.size;
  }

  /** Adopts `unit`'s session if its record is valid (true), in the background; false: it is an orphan. */
  adoptOrReap(unit: string, context: string): boolean {
    const judged = this.judge(unit);
    if ('why' in judged) {
      this.#forget(unit);
      this.#deps.reap(unit, `${context}: not adopted, ${judged.why}`);
      return false;
    }
    this.adopt(judged.record);
    return true;
  }

  /** A session that will not be adopted: what is left of it here (a socket without its record) goes now. */
  #forget(unit: string): void {
    const id = sessionIdOf(unit, this.#deps.unitPrefix);
    if (id !== undefined) this.#deps.store.remove(id);
  }

  /** `unit`'s session is stopped as an orphan, its files gone. */
  reap(unit: string, why: string): void {
    this.#forget(unit);
    this.#deps.reap(unit, why);
  }

  /** A new worker for the session; ATTACH, LIST and STOP_SESSION for it wait until it holds it. */
  adopt(record: KeptRecord): void {
    const { unit, sessionId } = record;
    if (this.#adopting.has(unit)) return;
    this.#adopting.add(unit);
    const done = this.#adopt(record).finally(() => {
      this.#adopting.delete(unit);
      this.#deps.settled?.();
    });
    this.#deps.kept.adopting(sessionId, done);
  }

  async #adopt(record: KeptRecord): Promise<void> {
    const { log } = this.#deps;
    let worker: WorkerHandle;
    let slot: SessionSlot;
    // A spare may have died unseen (a kill of the broker's workers takes the spares too): the handover
    // then fails at once (EPIPE) and the next worker is asked, a few times, before the session is reaped.
    for (let attempt = 1; ; attempt += 1) {
      try {
        worker = await this.#deps.takeWorker();
      } catch (error) {
        return this.reap(record.unit, `kept, but no worker could adopt it (${(error as Error).message})`);
      }
      slot = this.#deps.slots.tryTake() ?? UNCOUNTED;
      try {
        worker.adoptKept(record.unit, record.sessionId, record.service ?? undefined);
        break;
      } catch (error) {
        slot.release();
        // A worker still alive after a failed handover is not left idle and uncounted.
        try {
          worker.shutdown();
        } catch {}
        const why = `its adoption could not be handed to worker ${worker.child.pid} (${(error as Error).message})`;
        if (attempt >= HANDOVER_ATTEMPTS) return this.reap(record.unit, `kept, but ${why}`);
        log('warning', `kept session ${record.unit}: ${why}; another worker is asked`);
      }
    }
    this.#deps.hold(worker, slot, record.service ?? undefined);
    log('notice', `adopting kept session ${record.unit} (worker ${worker.child.pid})`);
    await worker.keptSettled;
  }
}
