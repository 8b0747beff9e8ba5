// Worker processes: one warm spare ready (Node takes ~100 ms to start), one session per process at
// a time. The next spare starts once the session it was taken for has started, not while that start
// is under way (it would compete with it for the CPU). A worker whose session ended cleanly comes
// back to the pool and serves the next start before any spare: starts in a row then boot no Node.
// Idle for a while, the pool keeps one fresh spare only.
// A worker tells us its unit's name before starting it; if the worker dies, we stop that unit.
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/schema.ts';
import { FdSocket } from '../io/fd-socket.ts';
import { closeQuietly } from '../io/fds.ts';
import { IoError } from '../io/io-error.ts';
import type { Logger } from '../log.ts';
import { ControlDecoder, ControlError, encodeControl, MAX_BROKER_MESSAGE, type PeerIdentity, type WorkerMessage } from '../control/broker-worker.ts';
import { signalWorker, startWorker, type StartedWorker } from './worker-process.ts';

/** How a worker is started: the bundle beside this one, or the TypeScript entry through tsx in a checkout. */
export function workerCommand(): string[] {
  const here = import.meta.url;
  if (here.endsWith('.ts')) return ['--import', 'tsx', fileURLToPath(new URL('../worker/entry.ts', here))];
  return [fileURLToPath(new URL('./worker.cjs', here))];
}

export class WorkerHandle {
  readonly child: ChildProcess;
  readonly control: FdSocket;
  /** Set when the worker names its unit, before it starts it. */
  unit: string | undefined;
  endReason: string | undefined;
  /** The worker said its session ended cleanly and it can take another (see renew()). */
  reusable = false;
  /** Each of these is the current session's; renew() makes new ones for the next. */
  ready!: Promise<void>;
  readonly exited: Promise<void>;
  /** Resolves with the reason once the worker reports its session ended (its unit is gone unless 'cleanup-failed'). */
  ended!: Promise<string>;
  /** Resolves once the worker's session has started or ended, or the worker is gone. */
  settled!: Promise<void>;
  #readyResolve: () => void = () => undefined;
  #readyReject: (error: Error) => void = () => undefined;
  #endedResolve: (reason: string) => void = () => undefined;
  #settle: () => void = () => undefined;
  /** The ready promise of the next session, made when a reusable end is reported (its 'ready' follows at once). */
  #nextReady: Promise<void> | undefined;
  #gone = false;
  #onMessage: (message: WorkerMessage) => void = () => undefined;

  /** Takes over a started worker; `config`, when given, is its first message (one started without it waits for it). */
  constructor(started: StartedWorker, log: Logger, config?: Config) {
    // Encoded first: a config too large to send leaves nothing half taken over (WorkerPool.of ends it).
    const first = config ? encodeControl({ type: 'config', config }, MAX_BROKER_MESSAGE) : undefined;
    this.child = started.child;
    this.control = new FdSocket(started.control);
    if (first) this.control.write(first);
    this.#lease();
    this.ready = this.#nextReady!;
    this.#nextReady = undefined;
    this.ended = new Promise((resolve) => (this.#endedResolve = resolve));
    this.settled = new Promise((resolve) => (this.#settle = resolve));
    this.exited = new Promise((resolve) => {
      const gone = (why: string) => {
        this.#gone = true;
        this.#readyReject(new Error(`worker ${this.child.pid ?? '(not started)'} ${why} before it was ready`));
        this.control.close();
        this.#settle();
        resolve();
      };
      void started.gone.then(({ why, error }) => {
        if (error) log('error', `worker: ${error.message}`);
        gone(why);
      });
    });
    const decoder = new ControlDecoder();
    this.control.startReading((chunk) => {
      let messages: unknown[];
      try {
        messages = decoder.push(chunk);
      } catch (error) {
        log('error', `worker ${this.child.pid}: ${(error as Error).message}`);
        signalWorker(this.child, 'SIGKILL');
        return;
      }
      for (const message of messages as WorkerMessage[]) {
        if (message.type === 'ready') this.#readyResolve();
        if (message.type === 'unit') this.unit = message.name;
        if (message.type === 'ended') {
          this.endReason = message.reason;
          this.reusable = message.reusable === true && message.reason !== 'cleanup-failed';
          // Its next 'ready' may come in this very chunk: the promise it resolves must exist now.
          if (this.reusable) this.#lease();
          this.#endedResolve(message.reason);
        }
        if (message.type === 'started' || message.type === 'ended') this.#settle();
        this.#onMessage(message);
      }
    });
    // A send that failed (the hand-off's ETOOMANYREFS, say) or a read that stopped: nothing more can
    // pass between us, so this worker could hold a slot for a session it never got, or report an end
    // nobody reads. Closed here, it reads EOF and ends (its session, if any, with SHUTDOWN).
    this.control.on('error', (error) => {
      if (this.control.closed) return;
      log('warning', `worker ${this.child.pid}: control channel failed (${error.message}); ending it`);
      this.control.close();
    });
  }

  /** A new ready promise, which the next 'ready' resolves and the process's death rejects. */
  #lease(): void {
    this.#nextReady = new Promise((resolve, reject) => {
      this.#readyResolve = resolve;
      this.#readyReject = reject;
    });
    this.#nextReady.catch(() => undefined);
  }

  /**
   * For the next session of a worker that reported a reusable end: fresh per-session state. False
   * (and nothing changed) when it did not, or is gone.
   */
  renew(): boolean {
    if (!this.reusable || this.#gone || this.control.closed || !this.#nextReady) return false;
    this.ready = this.#nextReady;
    this.#nextReady = undefined;
    this.reusable = false;
    this.unit = undefined;
    this.endReason = undefined;
    this.ended = new Promise((resolve) => (this.#endedResolve = resolve));
    this.settled = new Promise((resolve) => (this.#settle = resolve));
    this.#onMessage = () => undefined;
    return true;
  }

  onMessage(listener: (message: WorkerMessage) => void): void {
    this.#onMessage = listener;
  }

  /**
   * Hands over the connection and the peer's pidfd. Takes both whatever happens: sent, the control
   * socket closes our copies once the kernel has them; not sent, they are closed here. Throws when
   * they did not go: the control socket is closed, or the kernel refused the send, e.g. ETOOMANYREFS
   * (unix(7): our user has more descriptors in flight than our RLIMIT_NOFILE, and the broker holds no
   * capability to pass that). The worker then learns nothing more and ends ('error' above).
   */
  handOff(id: number, clientFd: number, pidfd: number, peer: PeerIdentity, deadlineMs: number, version: number): void {
    try {
      this.control.write(encodeControl({ type: 'session', id, peer, deadlineMs, version, reuse: true }), [clientFd, pidfd]);
    } catch (error) {
      closeQuietly(clientFd);
      closeQuietly(pidfd);
      throw error;
    }
    const failure = this.control.writeFailure;
    if (failure?.errno === 'ETOOMANYREFS') {
      throw new IoError(failure.code, `${failure.message} (more descriptors in flight for uid ${process.getuid?.()} than this process's RLIMIT_NOFILE)`, { errno: failure.errno, syscall: failure.syscall, cause: failure });
    }
    if (failure) throw failure;
  }

  shutdown(): void {
    if (!this.control.closed) this.control.write(encodeControl({ type: 'shutdown' }));
  }
}

/** What the pool needs of a worker (a WorkerHandle, or a fake in tests). */
export type PooledWorker = Pick<WorkerHandle, 'ready' | 'exited' | 'settled' | 'control' | 'child' | 'shutdown' | 'renew'>;

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
