// One terminal with node-pty's IPty surface over a supervisor session: synchronous to create, queued until
// STARTED, one onExit after all output, credit as its pause()/resume().
import { EventEmitter } from 'node:events';
import { statSync } from 'node:fs';
import { constants, homedir } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { connect } from '../client.ts';
import { ClientError } from '../client-error.ts';
import type { Session, SessionEnd } from '../session.ts';
import { FAILURE_EXIT, exitEvent, type IExitEvent } from './exit-shape.ts';
import { failureLine } from './failure-line.ts';
import { checkSize, type ResolvedOptions } from './options.ts';

export interface IDisposable {
  dispose(): void;
}

/** node-pty's event: call it with a listener, get a disposable back. */
export interface IEvent<T> {
  (listener: (event: T) => unknown): IDisposable;
}

export interface IStartEvent {
  /** The program's PID (see `pid`). */
  pid: number;
  /** The session's systemd unit. */
  unit: string;
  /** Environment names that did not reach the program (trimmed to the protocol's limits here). */
  droppedEnv: string[];
}

/** Input accepted before STARTED, at most; beyond it write() throws QUEUE_FULL (node-pty's queue is unbounded). */
export const MAX_QUEUED_INPUT = 1024 * 1024;

type Phase = 'starting' | 'running' | 'exited';

export class Terminal extends EventEmitter {
  #options: ResolvedOptions;
  #phase: Phase = 'starting';
  #pid = 0;
  #cols: number;
  #rows: number;
  #session: Session | undefined;
  #abort = new AbortController();
  /** Before STARTED: input and the latest size, sent in order once it comes. */
  #queued: Buffer[] = [];
  #queuedBytes = 0;
  #resizeQueued = false;
  #startSent = false;
  #signalsQueued: number[] = [];
  #killQueued = false;
  #paused = false;
  #decoder: StringDecoder | undefined;
  #exitReported = false;

  constructor(options: ResolvedOptions) {
    super();
    this.#options = options;
    this.#cols = options.cols;
    this.#rows = options.rows;
    this.#decoder = options.encoding === null ? undefined : new StringDecoder('utf8');
    // After the caller's synchronous code, so listeners attached right after spawn() see every event.
    queueMicrotask(() => void this.#start());
  }

  /** 0 until the session has started; then the program's own PID (protocol version 2's STARTED), so
   * `process.kill(pid, signal)` reaches the program as with node-pty. A server speaking only version 1
   * reports the session helper's, the program's parent, and that is what this is then. */
  get pid(): number {
    return this.#pid;
  }

  /** The session's id (protocol version 3): with `keepMs`, what attach(id) takes to reattach after this IPty
   * (or its whole process) is gone. undefined until the session has started, and with an older server. */
  get id(): number | undefined {
    return this.#session?.id;
  }

  /** The output offset just after the last byte onData delivered: attach(id, { cursor }) from it goes on with
   * no byte lost or repeated. */
  get cursor(): number {
    if (this.#session) return this.#session.offset;
    const from = this.#options.attach?.from;
    return typeof from === 'number' ? from : 0;
  }

  get cols(): number {
    return this.#cols;
  }

  get rows(): number {
    return this.#rows;
  }

  /** The program as spawned (the terminal's foreground process is not visible from here). */
  get process(): string {
    return this.#options.argv[0]!;
  }

  get handleFlowControl(): boolean {
    return false;
  }

  readonly onData: IEvent<string | Buffer> = (listener) => this.#subscribe('data', listener);
  readonly onExit: IEvent<IExitEvent> = (listener) => this.#subscribe('exit', listener);
  /** Once, when the supervisor has started the session. */
  readonly onStart: IEvent<IStartEvent> = (listener) => this.#subscribe('start', listener);

  write(data: string | Buffer): void {
    if (this.#phase === 'exited') return;
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
    if (bytes.length === 0) return;
    if (this.#session) {
      this.#session.write(bytes);
      return;
    }
    if (this.#queuedBytes + bytes.length > MAX_QUEUED_INPUT) {
      throw new ClientError('QUEUE_FULL', `more than ${MAX_QUEUED_INPUT} bytes written before the session started`);
    }
    this.#queued.push(bytes);
    this.#queuedBytes += bytes.length;
  }

  /** node-pty's order: columns, then rows. A no-op once the program has exited. */
  resize(cols: number, rows: number): void {
    if (this.#phase === 'exited') return;
    checkSize(cols, rows);
    this.#cols = cols;
    this.#rows = rows;
    // An observer's size is its own view's: only the controller sizes the terminal.
    if (this.#session) {
      if (this.#session.role === 'control') this.#session.resize(rows, cols);
    }
    // Before START goes, START itself carries the size; after, RESIZE follows STARTED.
    else if (this.#startSent) this.#resizeQueued = true;
  }

  /** node-pty clears the Windows console only; on a Unix terminal it does nothing, and neither does this. */
  clear(): void {}

  /** No signal: a hang-up, as node-pty's kill() (SIGHUP): the program's process group gets SIGHUP (a
   * `trap … HUP` runs, an interactive shell ends), and 1 s later every process left in the session's
   * unit is ended (SIGTERM and SIGHUP, SIGKILL after session.stopTimeoutSec); onExit reports how the
   * program ended. A signal name: to the terminal's foreground process group, as a terminal sends ^C
   * (node-pty sends it to the program alone: the one intended difference). */
  kill(signal?: string): void {
    if (this.#phase === 'exited') return;
    if (signal === undefined) {
      // An observer cannot end the session: its kill() ends its own view (onExit with exit code 0).
      if (this.#session?.role === 'observe') this.#session.detach();
      else if (this.#session) {
        this.#session.stop().catch(() => {});
      } else {
        this.#killQueued = true;
        this.#abort.abort();
      }
      return;
    }
    const signo = (constants.signals as Record<string, number | undefined>)[signal];
    if (signo === undefined) throw new ClientError('INVALID_ARGUMENT', `unknown signal ${JSON.stringify(signal)}`);
    if (this.#session) this.#session.signal(signo);
    else this.#signalsQueued.push(signo);
  }

  /** Leaves a kept session running and this IPty done: the connection closes, no onExit follows (the program
   * did not exit). attach(id, { cursor }) picks it up again. Throws for a session that is not kept. */
  detach(): void {
    if (this.#phase === 'exited') return;
    if (!this.#session) throw new ClientError('STATE', 'the session has not started yet');
    this.#session.detach();
    this.#exitReported = true;
    this.#phase = 'exited';
  }

  /** Another connection took control of the session (or gave it back): 'controller-changed' says this IPty's
   * role; an observer's write() throws NOT_CONTROLLER. */
  get role(): 'control' | 'observe' {
    return this.#session?.role ?? this.#options.attach?.role ?? 'control';
  }

  /** Stops reading output: no credit goes back, so the supervisor stops reading the terminal and the
   * program blocks on its writes. Nothing is lost. */
  pause(): void {
    this.#paused = true;
    this.#session?.output.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#session?.output.resume();
  }

  #subscribe(event: string, listener: (value: any) => unknown): IDisposable {
    this.on(event, listener);
    return { dispose: () => this.off(event, listener) };
  }

  async #start(): Promise<void> {
    const { socketPath, argv, env, timeoutMs } = this.#options;
    const cwd = this.#workingDirectory();
    const timeout = timeoutMs === undefined ? {} : { timeoutMs };
    let session: Session;
    try {
      const client = await connect(socketPath, { signal: this.#abort.signal, ...timeout });
      this.#startSent = true;
      const { attach, keepMs, retainBytes, label, sandbox } = this.#options;
      const common = { rows: this.#rows, cols: this.#cols, signal: this.#abort.signal, ...timeout };
      session = attach
        ? await client.attach(attach.id, { from: attach.from, role: attach.role, ...common })
        : await client.start({ argv, cwd, env, keepMs, retainBytes, label, ...sandbox, ...common });
    } catch (error) {
      if (this.#killQueued) return this.#exit({ exitCode: 0, signal: constants.signals.SIGHUP });
      return this.#fail(error);
    }
    this.#session = session;
    this.#pid = session.pid;
    this.#phase = 'running';
    this.#wire(session);
    this.#emitSafe('start', { pid: session.pid, unit: session.unit, droppedEnv: [...session.droppedEnv] });
    if (this.#resizeQueued) session.resize(this.#rows, this.#cols);
    for (const bytes of this.#queued.splice(0)) session.write(bytes);
    this.#queuedBytes = 0;
    for (const signo of this.#signalsQueued.splice(0)) session.signal(signo);
  }

  /** The cwd asked for; with cwdFallbackToHome, $HOME when it is not a directory (any more). */
  #workingDirectory(): string {
    const { cwd, cwdFallbackToHome, env } = this.#options;
    if (!cwdFallbackToHome) return cwd;
    try {
      if (statSync(cwd).isDirectory()) return cwd;
    } catch {
      // Gone, or not reachable: the fallback applies.
    }
    return env.HOME || homedir();
  }

  #wire(session: Session): void {
    const output = session.output;
    session.on('truncated', (event) => this.#emitSafe('truncated', event));
    session.on('controller-changed', (event) => this.#emitSafe('controller-changed', event));
    output.on('data', (chunk: Buffer) => {
      if (this.#exitReported) return;
      const data = this.#decoder ? this.#decoder.write(chunk) : chunk;
      if (data.length > 0) this.#emitSafe('data', data);
    });
    // Output ends after EXIT/STOPPED once every byte was read (and also on failure): exit comes after it.
    const ended = new Promise<void>((resolve) => output.once('end', resolve).once('close', resolve));
    session.exit.then(
      async (end: SessionEnd) => {
        await ended;
        const rest = this.#decoder?.end();
        if (rest) this.#emitSafe('data', rest);
        this.#exit(exitEvent(end));
      },
      (error: unknown) => this.#fail(error),
    );
    if (this.#paused) output.pause();
  }

  /** The supervisor refused or failed the session, or the connection broke: 'error', the reason as one
   * line of output (what a caller that shows only onData sees, as node-pty's chdir failure), then onExit. */
  #fail(error: unknown): void {
    this.#emitError(error);
    if (!this.#exitReported) {
      const rest = this.#decoder?.end();
      if (rest) this.#emitSafe('data', rest);
      const line = failureLine(error);
      this.#emitSafe('data', this.#options.encoding === null ? Buffer.from(line, 'utf8') : line);
    }
    this.#exit(FAILURE_EXIT);
  }

  #emitError(error: unknown): void {
    // An 'error' nobody listens to would throw out of a callback: node-pty users listen to onExit only.
    if (this.listenerCount('error') > 0) this.#emitSafe('error', error);
  }

  #exit(event: IExitEvent): void {
    if (this.#exitReported) return;
    this.#exitReported = true;
    this.#phase = 'exited';
    this.#queued = [];
    this.#emitSafe('exit', event);
  }

  #emitSafe(event: string, value: unknown): void {
    try {
      this.emit(event, value);
    } catch (error) {
      // A listener's exception is its own: surface it as uncaught, without breaking our state.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}
