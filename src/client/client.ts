// The client's connection: handshake, then one START with the cwd fd the client opened itself.
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { LATEST_VERSION, PROTOCOL_VERSION, encodeFrame, isProtocolError, type Frame } from '../protocol/index.ts';
import { ClientError } from './client-error.ts';
import { fitEnvironment } from './environment-fit.ts';
import { FrameChannel, type ChannelHandler } from './frame-channel.ts';
import { RuntimeSocket } from './runtime-socket.ts';
import { Session } from './session.ts';

/** How long connect() waits for WELCOME, and start() for STARTED, unless told otherwise: a server that
 * accepts and never answers must not hold a caller forever. Starting a unit takes milliseconds; this
 * covers a loaded machine and a cold socket activation many times over. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ConnectOptions {
  /** Abandons the handshake (rejecting with ABORTED). */
  signal?: AbortSignal;
  /** Rejects with TIMEOUT when no WELCOME came within this many ms (default 30 s; 0: no deadline). */
  timeoutMs?: number;
}

export interface StartOptions {
  /** Program and arguments; argv[0] is resolved by the session's PATH. */
  argv: string[];
  /** Directory the session runs in, opened here and handed over as an fd (default: process.cwd()). */
  cwd?: string;
  /** Environment for the program; the server applies its own policy on top. What one START cannot carry
   * (over 128 names or 64 KiB, or not valid for execve) is left out and named in Session.droppedEnv. */
  env?: Record<string, string>;
  rows?: number;
  cols?: number;
  /** Abandons waiting for STARTED (rejecting with ABORTED and closing the connection). */
  signal?: AbortSignal;
  /** Rejects with TIMEOUT (and closes) when no STARTED came within this many ms (default 30 s; 0: none). */
  timeoutMs?: number;
}

type State = 'handshake' | 'ready' | 'starting' | 'started' | 'closed';

interface Waiter {
  resolve: (value: unknown) => void;
  reject: (error: ClientError) => void;
}

/** Connects and completes the handshake: HELLO offering versions 1..2, then WELCOME (either), or ERROR →
 * rejects with its code's name and the server's text. */
export function connect(path: string, options: ConnectOptions = {}): Promise<Client> {
  return Client.connect(path, options);
}

export class Client {
  #channel: FrameChannel;
  #state: State = 'handshake';
  #waiter: Waiter | undefined;
  /** Why the connection ended before a session took it over. */
  #failure: ClientError | undefined;
  #version = 0;
  /** Names the client could not fit into START. */
  #droppedEnv: string[] = [];

  private constructor(socket: RuntimeSocket) {
    const handler: ChannelHandler = {
      frame: (frame) => this.#onFrame(frame),
      end: () => this.#fail(new ClientError('HANGUP', 'the server closed the connection')),
      fail: (error) => this.#fail(error),
    };
    this.#channel = new FrameChannel(socket, handler);
  }

  static async connect(path: string, options: ConnectOptions = {}): Promise<Client> {
    throwIfAborted(options.signal);
    const deadline = new Deadline(options.timeoutMs, 'no WELCOME from the server');
    let socket: RuntimeSocket;
    try {
      socket = await deadline.race(RuntimeSocket.connect(path), (late) => late.then((s) => s.close(), () => {}));
    } finally {
      deadline.cancel();
    }
    throwIfAborted(options.signal);
    const client = new Client(socket);
    await client.#await(options.signal, deadline, () =>
      client.#channel.sendUrgent({ type: 'hello', minVersion: PROTOCOL_VERSION, maxVersion: LATEST_VERSION }),
    );
    return client;
  }

  /** The protocol version the server chose. */
  get version(): number {
    return this.#version;
  }

  /** Opens `cwd` itself, sends START with that fd attached in one sendmsg, closes its copy once sent, and
   * resolves with the session at STARTED (rejects at ERROR). One session per connection. */
  async start(options: StartOptions): Promise<Session> {
    if (this.#state !== 'ready') {
      throw this.#failure ?? new ClientError('STATE', `cannot start a session in state ${this.#state}`);
    }
    const { argv, cwd = process.cwd(), env = {}, rows = 24, cols = 80 } = options;
    throwIfAborted(options.signal);
    const dirFd = openDirectory(cwd);
    let start: Buffer;
    try {
      // bigint: st_ino and st_dev are 64-bit and may exceed 2^53.
      const stat = fstatSync(dirFd, { bigint: true });
      const fitted = fitEnvironment(env, argv);
      this.#droppedEnv = fitted.dropped;
      start = encodeFrame({ type: 'start', rows, cols, cwdDev: stat.dev, cwdIno: stat.ino, argv, env: fitted.entries });
    } catch (error) {
      closeSync(dirFd);
      if (isProtocolError(error)) throw new ClientError('BAD_START', error.message, { cause: error });
      throw new ClientError('CWD', `cannot stat ${cwd}`, { cause: error });
    }
    this.#state = 'starting';
    const deadline = new Deadline(options.timeoutMs, 'no STARTED from the server');
    return (await this.#await(options.signal, deadline, () => this.#sendStart(start, dirFd))) as Session;
  }

  /** Closes the connection; a pending handshake or start rejects with CLOSED. A started session owns the
   * connection from then on: close it through the session. */
  close(): void {
    if (this.#state === 'started') return;
    this.#fail(new ClientError('CLOSED', 'the connection was closed locally'));
  }

  #sendStart(start: Buffer, dirFd: number): void {
    // dirFd rides on START's first byte and is closed once sent (or on failure).
    this.#channel.sendWithFds(start, [dirFd]).catch((error: unknown) => this.#fail(asClientError(error)));
  }

  /** Sends, then waits for the answer the current state expects, until the deadline. */
  #await(signal: AbortSignal | undefined, deadline: Deadline, send: () => void): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => this.#fail(new ClientError('ABORTED', 'aborted by the caller', { cause: signal?.reason }));
      const settle = () => {
        signal?.removeEventListener('abort', onAbort);
        deadline.cancel();
      };
      this.#waiter = {
        resolve: (value) => (settle(), resolve(value)),
        reject: (error) => (settle(), reject(error)),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      deadline.arm((error) => this.#fail(error));
      try {
        send();
      } catch (error) {
        this.#fail(asClientError(error));
      }
    });
  }

  #onFrame(frame: Frame): void {
    if (frame.type === 'error') return this.#fail(ClientError.fromWire(frame.code, frame.message));
    if (this.#state === 'handshake' && frame.type === 'welcome') {
      if (frame.version < PROTOCOL_VERSION || frame.version > LATEST_VERSION) {
        return this.#fail(new ClientError('PROTOCOL', `the server chose version ${frame.version}, not offered`));
      }
      this.#version = frame.version;
      this.#channel.version = frame.version;
      this.#state = 'ready';
      return this.#settle(frame);
    }
    if (this.#state === 'starting' && frame.type === 'started') {
      // The session takes the channel over now, not after an await: OUTPUT may follow in the same read.
      this.#state = 'started';
      return this.#settle(new Session(this.#channel, frame, this.#droppedEnv));
    }
    this.#fail(new ClientError('PROTOCOL', `unexpected ${frame.type.toUpperCase()} while ${this.#state}`));
  }

  #settle(value: unknown): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve(value);
  }

  #fail(error: ClientError): void {
    if (this.#state === 'closed' || this.#state === 'started') return;
    this.#state = 'closed';
    this.#failure = error;
    this.#channel.close();
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.reject(error);
  }
}

function asClientError(error: unknown): ClientError {
  return error instanceof ClientError ? error : new ClientError('IO', `cannot send: ${String(error)}`, { cause: error });
}

/** One wait's time limit, which may span steps (connect, then the handshake): time spent in an earlier
 * step counts against the later ones. */
class Deadline {
  readonly #ms: number;
  readonly #what: string;
  readonly #startedAt = Date.now();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number | undefined, what: string) {
    this.#ms = ms ?? DEFAULT_TIMEOUT_MS;
    this.#what = what;
  }

  #error(): ClientError {
    return new ClientError('TIMEOUT', `${this.#what} within ${this.#ms} ms`);
  }

  /** Calls onExpired once the limit is reached, counting from construction. */
  arm(onExpired: (error: ClientError) => void): void {
    if (this.#ms <= 0) return;
    const left = Math.max(0, this.#startedAt + this.#ms - Date.now());
    this.#timer = setTimeout(() => onExpired(this.#error()), left);
  }

  /** `promise`, or TIMEOUT first; a result that comes late goes to `late` (to release it). */
  race<T>(promise: Promise<T>, late: (promise: Promise<T>) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let expired = false;
      this.arm((error) => {
        expired = true;
        late(promise);
        reject(error);
      });
      promise.then(
        (value) => (expired ? undefined : resolve(value)),
        (error: unknown) => (expired ? undefined : reject(error)),
      );
    });
  }

  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function openDirectory(cwd: string): number {
  try {
    // O_DIRECTORY: a path that is not a directory fails here, not at the server.
    return openSync(cwd, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (error) {
    const errno = (error as { code?: string }).code;
    throw new ClientError('CWD', `cannot open ${cwd} as a directory: ${errno ?? String(error)}`, { errno, cause: error });
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ClientError('ABORTED', 'aborted by the caller', { cause: signal.reason });
}
