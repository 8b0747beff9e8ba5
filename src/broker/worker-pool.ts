// Worker processes: one warm spare ready (Node takes ~100 ms to start), one process per session. The
// next spare starts once the session it was taken for has started, not while that start is under
// way (it would compete with it for the CPU). A worker tells us its unit's name before starting it;
// if the worker dies, we stop that unit.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/schema.ts';
import { FdSocket } from '../io/fd-socket.ts';
import type { Logger } from '../log.ts';
import { native } from '../native/binding.ts';
import { ControlDecoder, encodeControl, type PeerIdentity, type WorkerMessage } from '../control/broker-worker.ts';

/** How a worker is started: the bundle beside this one, or the TypeScript entry through tsx in a checkout. */
export function workerCommand(): string[] {
  const here = import.meta.url;
  if (here.endsWith('.ts')) return ['--import', 'tsx', fileURLToPath(new URL('../worker/main.ts', here))];
  return [fileURLToPath(new URL('./worker.js', here))];
}

/** The environment a worker gets: nothing systemd meant for the broker alone. */
export function workerEnvironment(env: NodeJS.ProcessEnv, config: Config, busAddress: string | undefined): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (/^(LISTEN_|NOTIFY_SOCKET$|WATCHDOG_)/.test(name)) continue;
    clean[name] = value;
  }
  clean.OPENCODE_PTY_WORKER_CONFIG = JSON.stringify(config);
  if (busAddress) clean.OPENCODE_PTY_BUS_ADDRESS = busAddress;
  else delete clean.OPENCODE_PTY_BUS_ADDRESS;
  return clean;
}

export class WorkerHandle {
  readonly child: ChildProcess;
  readonly control: FdSocket;
  /** Set when the worker names its unit, before it starts it. */
  unit: string | undefined;
  endReason: string | undefined;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  /** Resolves with the reason once the worker reports its session ended (its unit is gone unless 'cleanup-failed'). */
  readonly ended: Promise<string>;
  #endedResolve: (reason: string) => void = () => undefined;
  /** Resolves once the worker's session has started or ended, or the worker is gone. */
  readonly settled: Promise<void>;
  #onMessage: (message: WorkerMessage) => void = () => undefined;

  constructor(command: string[], env: NodeJS.ProcessEnv, log: Logger) {
    const [ours, theirs] = native().socketpair();
    try {
      this.child = spawn(process.execPath, command, { stdio: ['ignore', 'inherit', 'inherit', theirs], env });
    } finally {
      closeSync(theirs);
    }
    this.control = new FdSocket(ours);
    let readyResolve: () => void = () => undefined;
    let readyReject: (error: Error) => void = () => undefined;
    this.ready = new Promise((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    this.ready.catch(() => undefined);
    let settle: () => void = () => undefined;
    this.settled = new Promise((resolve) => (settle = resolve));
    this.ended = new Promise((resolve) => (this.#endedResolve = resolve));
    this.exited = new Promise((resolve) => {
      const gone = (why: string) => {
        readyReject(new Error(`worker ${this.child.pid ?? '(not started)'} ${why} before it was ready`));
        this.control.close();
        settle();
        resolve();
      };
      this.child.once('exit', (code, signal) => gone(`exited (${signal ?? code})`));
      // A spawn that fails (EAGAIN, EMFILE…) emits only 'error', never 'exit'.
      this.child.once('error', (error) => {
        log('error', `worker: ${error.message}`);
        gone(`could not start: ${error.message}`);
      });
    });
    const decoder = new ControlDecoder();
    this.control.startReading((chunk) => {
      let messages: unknown[];
      try {
        messages = decoder.push(chunk);
      } catch (error) {
        log('error', `worker ${this.child.pid}: ${(error as Error).message}`);
        this.child.kill('SIGKILL');
        return;
      }
      for (const message of messages as WorkerMessage[]) {
        if (message.type === 'ready') readyResolve();
        if (message.type === 'unit') this.unit = message.name;
        if (message.type === 'ended') {
          this.endReason = message.reason;
          this.#endedResolve(message.reason);
        }
        if (message.type === 'started' || message.type === 'ended') settle();
        this.#onMessage(message);
      }
    });
    this.control.on('error', () => undefined);
  }

  onMessage(listener: (message: WorkerMessage) => void): void {
    this.#onMessage = listener;
  }

  /** Hands over the connection and the peer's pidfd; the control socket closes our copies once sent. */
  handOff(id: number, clientFd: number, pidfd: number, peer: PeerIdentity, deadlineMs: number): void {
    this.control.write(encodeControl({ type: 'session', id, peer, deadlineMs }), [clientFd, pidfd]);
  }

  shutdown(): void {
    if (!this.control.closed) this.control.write(encodeControl({ type: 'shutdown' }));
  }
}

/** What the pool needs of a worker (a WorkerHandle, or a fake in tests). */
export type PooledWorker = Pick<WorkerHandle, 'ready' | 'exited' | 'settled' | 'control' | 'child' | 'shutdown'>;

export class WorkerPool<W extends PooledWorker = WorkerHandle> {
  #spawn: () => W;
  #spare: W | undefined;
  #stopped = false;
  #log: Logger;

  constructor(spawnWorker: () => W, log: Logger) {
    this.#spawn = spawnWorker;
    this.#log = log;
  }

  /** A pool of WorkerHandles running `command`. */
  static of(command: string[], env: NodeJS.ProcessEnv, log: Logger): WorkerPool {
    return new WorkerPool(() => new WorkerHandle(command, env, log), log);
  }

  /** Starts the spare if there is none. */
  warm(): void {
    if (this.#stopped || this.#spare) return;
    const spare = this.#spawn();
    this.#spare = spare;
    spare.ready.catch((error: Error) => this.#log('warning', error.message));
    // A spare that dies (before or after it was ready) is replaced on the next take().
    void spare.exited.then(() => {
      if (this.#spare === spare) this.#spare = undefined;
    });
  }

  /**
   * The ready spare (started now if there is none, and waited for if still starting). The next
   * spare starts when this worker's session has started (or ended), or at the next take().
   */
  async take(): Promise<W> {
    // A spare that dies before it is ready (it could not reach the bus, say, during a bus restart)
    // is replaced once: the replacement starts the moment the first one is gone.
    for (let attempt = 0; ; attempt += 1) {
      this.warm();
      const worker = this.#spare;
      if (!worker) throw new Error('the worker pool is stopped');
      this.#spare = undefined;
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

  /** Ends the spare (it holds no session) and starts no more. */
  stop(): void {
    this.#stopped = true;
    this.#spare?.shutdown();
    this.#spare = undefined;
  }
}
