// The sessions the broker has handed to workers: each holds a session slot until its unit is gone,
// reported by its worker or, when the worker exited without cleaning up, stopped here (never fatal).
import { DEFAULT_LIMITS } from '../config/index.ts';
import type { Logger } from '../log.ts';
import { DEFAULT_UNIT_PREFIX } from '../systemd/index.ts';
import type { SessionSlot } from './session-slots.ts';
import { reapUnit, type ReapTimes, type UnitStopper } from './unit-reaper.ts';
import type { WorkerHandle } from './worker-handle.ts';
import { KeptSessions } from './kept-sessions.ts';
import type { KeptEnds } from './kept-ends.ts';

/** How long a worker may outlive its session's report before that is worth a warning. */
const HELD_WORKER_WARNING_MS = 10_000;

export interface LiveSessionDeps {
  units: UnitStopper;
  log: Logger;
  /** Bounds for stopping a dead worker's unit. */
  reapTimes: ReapTimes;
  /** A worker whose session ended cleanly and that offers another goes back to the pool. */
  giveBack(worker: WorkerHandle): void;
  /** Called when the set changed (the broker may now be idle or done). */
  changed(): void;
  /** Called when a slot held by an exited worker is free (the broker's status). */
  slotFreed(): void;
  /** limits.maxKept and config.unitPrefix (kept-sessions.ts); by default the config's defaults. */
  maxKept?: number;
  unitPrefix?: string;
  /** A worker died with its kept session (its unit named, its keep granted): true when that session is
   * taken care of (adopted by a new worker, or left to the next broker), so its unit is not stopped. */
  keptWorkerGone?(unit: string): boolean;
  /** The ends root keeps of kept sessions past their units (kept-ends.ts). */
  ends?: KeptEnds;
}

export class LiveSessions {
  #deps: LiveSessionDeps;
  #workers = new Set<WorkerHandle>();
  /** Version 3: which worker runs which kept session, and LIST's answers. */
  readonly kept: KeptSessions<WorkerHandle>;

  constructor(deps: LiveSessionDeps) {
    this.#deps = deps;
    this.kept = new KeptSessions({ workers: () => this.#workers, maxKept: () => deps.maxKept ?? DEFAULT_LIMITS.maxKept, unitPrefix: deps.unitPrefix ?? DEFAULT_UNIT_PREFIX, ends: deps.ends });
  }

  get size(): number {
    return this.#workers.size;
  }

  /** The units live workers have named: their sessions' and their warm units. */
  claimed(): Set<string> {
    return new Set([...this.#workers].flatMap((worker) => [worker.unit, worker.warmUnit].filter((unit): unit is string => unit !== undefined)));
  }

  /** Asks every worker to end its session (SIGTERM to the broker). */
  shutdown(): void {
    for (const worker of this.#workers) worker.shutdown();
  }

  /** A session now lives in `worker`, holding `slot` until it is over; when the worker exits, its unit must be gone too.
   * `service`: the client service its peer was confirmed inside (the principals' `sees`). */
  adopt(worker: WorkerHandle, slot: SessionSlot, service?: string): void {
    worker.service = service;
    this.#workers.add(worker);
    this.#deps.changed();
    const { log } = this.#deps;
    worker.onMessage((message) => {
      try {
        if (message.type === 'keep-request') this.kept.keepRequested(worker);
        if (message.type === 'described') this.kept.described(message.requestId, message.entry);
        if (message.type === 'kept-ended') this.kept.ended(worker, message.ended);
        if (message.type === 'kept') {
          // An end held under its id is not its own (kept-ends.ts live); the status names kept sessions.
          this.kept.live(worker);
          this.#deps.changed();
        }
      } catch (error) {
        // The answer could not go: the worker's channel failed, and it is ending (worker-handle.ts).
        log('warning', `worker ${worker.child.pid}: ${(error as Error).message}`);
      }
    });
    // Its end is decided: a start that finds every slot held may wait for this one (session-slots.ts).
    // A worker whose exit is then held (below) keeps it finishing: such a wait ends at its bound.
    void worker.finishing.then(() => slot.finishing());
    // The session is over once its unit is gone, reported or after the worker's exit. Its slot is
    // free then if the worker is reused, else only once the worker has exited: a worker whose exit
    // is held (a thread closing a peer's FUSE file whose FLUSH is never answered waits in D state,
    // unkillable, and keeps the whole process's memory, about 70 MB) keeps the slot, so one client
    // can pin at most maxSessions of them, as many as it could hold sessions anyway; shutdown and
    // idle exit do not wait for them.
    const cleanEnd = worker.ended.then((reason) => (reason === 'cleanup-failed' ? worker.exited : undefined));
    const over = Promise.race([worker.exited, cleanEnd]).then(async () => {
      // A clean end the worker offers to repeat: it waits, warm, for the next session.
      const reusable = worker.reusable && worker.child.exitCode === null && worker.child.signalCode === null;
      if (!reusable && worker.child.exitCode === null && worker.child.signalCode === null) {
        const held = setTimeout(() => log('warning', `worker ${worker.child.pid} reported its session ended but has not exited after 10 s; its session slot stays taken until it does`), HELD_WORKER_WARNING_MS);
        held.unref();
        void worker.exited.then(() => clearTimeout(held));
      }
      // A worker reports 'ended' only after its unit is gone, unless that cleanup failed.
      const cleanedUp = worker.endReason !== undefined && worker.endReason !== 'cleanup-failed';
      if (worker.unit && !cleanedUp && worker.keepGranted && this.#deps.keptWorkerGone?.(worker.unit)) {
        log('warning', `worker ${worker.child.pid} exited with its kept session ${worker.unit}, which runs on`);
      } else if (worker.unit && !cleanedUp) {
        log('warning', `worker ${worker.child.pid} exited without cleaning up; stopping ${worker.unit}`);
        // Never fatal: a unit that will not stop is logged, SIGKILLed, and at worst left to the
        // next start's orphan cleanup, while every other session goes on.
        await reapUnit(this.#deps.units, worker.unit, this.#deps.reapTimes, log);
      }
      this.#workers.delete(worker);
      if (reusable) {
        slot.release();
        this.#deps.giveBack(worker);
      }
      this.#deps.changed();
      return reusable;
    });
    void Promise.all([over, worker.exited]).then(([reused]) => {
      if (reused) return;
      slot.release();
      this.#deps.slotFreed();
    });
  }
}
