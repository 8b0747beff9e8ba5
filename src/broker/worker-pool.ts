// Worker processes: one warm spare ready (Node takes ~100 ms to start), one session per process at
// a time. The next spare starts once the session it was taken for has started, not while that start
// is under way (it would compete with it for the CPU). A worker whose session ended cleanly comes
// back to the pool and serves the next start before any spare: starts in a row then boot no Node.
// Idle for a while, the pool keeps one fresh spare only.
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/index.ts';
import { closeQuietly } from '../io/index.ts';
import type { Logger } from '../log.ts';
import { ControlError } from '../control/index.ts';
import { WorkerHandle } from './worker-handle.ts';
import { signalWorker, startWorker, type StartedWorker } from './worker-process.ts';

/** How a worker is started: the bundle beside this one, or the TypeScript entry through tsx in a checkout. */
export function workerCommand(): string[] {
  const here = import.meta.url;
  if (here.endsWith('.ts')) return ['--import', 'tsx', fileURLToPath(new URL('../worker/entry.ts', here))];
  return [fileURLToPath(new URL('./worker.cjs', here))];
}

/** What the pool needs of a worker (a WorkerHandle, or a fake in tests). */
export type PooledWorker = Pick<WorkerHandle, 'ready' | 'exited' | 'settled' | 'control' | 'child' | 'shutdown' | 'renew'> & Partial<Pick<WorkerHandle, 'warmUnit'>>;

/**
 * With a worker given back and a spare both idle this long, the one given back goes: it has grown
 * with its sessions (21 against 14 MB USS measured), and an idle broker keeps one fresh spare.
 */
export const IDLE_SPARE_MS = 2000;

/** A take() whose spare still boots: a worker given back meanwhile is ready sooner. */
interface Waiter<W> {
  done: boolean;
  give(worker: W): void;
}

export class WorkerPool<W extends PooledWorker = WorkerHandle> {
  #spawn: () => W;
  #spare: W | undefined;
  /** A worker whose session ended cleanly, waiting warm for the next; taken before the spare. */
  #returned: W | undefined;
  #waiters: Waiter<W>[] = [];
  #trimTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #log: Logger;
  #idleSpareMs: number;

  constructor(spawnWorker: () => W, log: Logger, options: { idleSpareMs?: number } = {}) {
    this.#spawn = spawnWorker;
    this.#log = log;
    this.#idleSpareMs = options.idleSpareMs ?? IDLE_SPARE_MS;
  }

  /**
   * A pool of WorkerHandles running `command` with `env` (which carries the config). `early`, a
   * worker the entry started before the config was loaded, is the first spare: it gets the config
   * as its first message.
   */
  static of(command: string[], env: NodeJS.ProcessEnv, log: Logger, early?: { worker: StartedWorker; config: Config }): WorkerPool {
    let first = early;
    return new WorkerPool(() => {
      const adopt = first;
      first = undefined;
      if (!adopt) return new WorkerHandle(startWorker(command, env), log);
      try {
        return new WorkerHandle(adopt.worker, log, adopt.config);
      } catch (error) {
        signalWorker(adopt.worker.child, 'SIGKILL');
        // Only the config's encoding fails before the fd is taken; FdSocket closes its own on failure.
        if (error instanceof ControlError) closeQuietly(adopt.worker.control);
        throw error;
      }
    }, log);
  }

  /** The warm units of the idle workers (the spare, the one given back). */
  warmUnits(): string[] {
    return [this.#spare, this.#returned].flatMap((worker) => (worker?.warmUnit ? [worker.warmUnit] : []));
  }

  /** Starts the spare if there is no idle worker. */
  warm(): void {
    if (this.#stopped || this.#spare || this.#returned) return;
    let spare: W;
    try {
      spare = this.#spawn();
    } catch (error) {
      // No spare (socketpair or spawn failed: EMFILE…); the next take() tries again or says "no worker".
      this.#log('warning', `cannot start a spare worker: ${(error as Error).message}`);
      return;
    }
    this.#spare = spare;
    spare.ready.catch((error: Error) => this.#log('warning', error.message));
    // A spare that dies (before or after it was ready) is replaced on the next take().
    void spare.exited.then(() => {
      if (this.#spare === spare) this.#spare = undefined;
    });
  }

  /**
   * A worker whose session ended cleanly (it said so): it serves a take() still waiting for its
   * spare, else the next one. One such worker is kept; any other is shut down.
   */
  giveBack(worker: W): void {
    if (this.#stopped || !worker.renew()) return worker.shutdown();
    const waiter = this.#waiters.find((entry) => !entry.done);
    if (waiter) return waiter.give(worker);
    if (this.#returned) return worker.shutdown();
    this.#returned = worker;
    void worker.exited.then(() => {
      if (this.#returned === worker) this.#returned = undefined;
    });
    if (this.#spare) this.#trimLater();
  }

  #trimLater(): void {
    clearTimeout(this.#trimTimer);
    this.#trimTimer = setTimeout(() => {
      if (!this.#returned || !this.#spare) return;
      this.#returned.shutdown();
      this.#returned = undefined;
    }, this.#idleSpareMs);
    this.#trimTimer.unref();
  }

  /**
   * A worker given back, else the ready spare (started now if there is none, and waited for if
   * still starting, unless a worker is given back first). The next spare starts when this
   * worker's session has started (or ended), or at the next take().
   */
  async take(): Promise<W> {
    // A spare that dies before it is ready (it could not reach the bus, say, during a bus restart)
    // is replaced once: the replacement starts the moment the first one is gone.
    for (let attempt = 0; ; attempt += 1) {
      const worker = this.#returned ?? (await this.#spareOrReturned());
      if (worker === this.#returned) this.#returned = undefined;
      try {
        await worker.ready;
      } catch (error) {
        if (attempt > 0 || this.#stopped) throw error;
        this.#log('warning', `${(error as Error).message}; trying a new one`);
        continue;
      }
      void worker.settled.then(() => this.warm());
      if (worker.control.closed) throw new Error(`worker ${worker.child.pid} is gone`);
      return worker;
    }
  }

  /** The spare once ready (or dead), or a worker given back before that; a spare passed over stays the spare. */
  async #spareOrReturned(): Promise<W> {
    this.warm();
    const spare = this.#spare;
    if (!spare) throw new Error(this.#stopped ? 'the worker pool is stopped' : 'no spare worker could be started (see the warning before)');
    this.#spare = undefined;
    const chosen = await new Promise<W>((resolve) => {
      const waiter: Waiter<W> = {
        done: false,
        give: (worker) => {
          waiter.done = true;
          resolve(worker);
        },
      };
      this.#waiters.push(waiter);
      const spareFirst = () => {
        if (!waiter.done) waiter.give(spare);
      };
      spare.ready.then(spareFirst, spareFirst);
    });
    this.#waiters = this.#waiters.filter((entry) => !entry.done);
    if (chosen !== spare) {
      if (!this.#stopped && !this.#spare) this.#spare = spare;
      else spare.shutdown();
    }
    return chosen;
  }

  /** Ends the idle workers (they hold no session) and starts no more. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#trimTimer);
    this.#spare?.shutdown();
    this.#spare = undefined;
    this.#returned?.shutdown();
    this.#returned = undefined;
  }
}
