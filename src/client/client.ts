// The client's connection: handshake, then one START with the cwd fd the client opened itself.
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { FdSocket } from '../io/fd-socket.ts';
import { native } from '../native/binding.ts';
import { PROTOCOL_VERSION, encodeFrame, isProtocolError, type Frame } from '../protocol/index.ts';
import { ClientError } from './client-error.ts';
import { FrameChannel, type ChannelHandler } from './frame-channel.ts';
import { Session } from './session.ts';

export interface ConnectOptions {
  /** Abandons the handshake (rejecting with ABORTED), e.g. AbortSignal.timeout(ms). */
  signal?: AbortSignal;
}

export interface StartOptions {
  /** Program and arguments; argv[0] is resolved by the session's PATH. */
  argv: string[];
  /** Directory the session runs in, opened here and handed over as an fd (default: process.cwd()). */
  cwd?: string;
  /** Environment for the program; the server applies its own allowlist on top. */
  env?: Record<string, string>;
  rows?: number;
  cols?: number;
  /** Abandons waiting for STARTED (rejecting with ABORTED and closing the connection). */
  signal?: AbortSignal;
}

type State = 'handshake' | 'ready' | 'starting' | 'started' | 'closed';

interface Waiter {
  resolve: (value: unknown) => void;
  reject: (error: ClientError) => void;
}

/** Connects and completes the handshake: HELLO with our one version, then WELCOME, or ERROR → rejects with
 * its code's name and the server's text. */
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

  private constructor(socket: FdSocket) {
    const handler: ChannelHandler = {
      frame: (frame) => this.#onFrame(frame),
      end: () => this.#fail(new ClientError('HANGUP', 'the server closed the connection')),
      fail: (error) => this.#fail(error),
    };
    this.#channel = new FrameChannel(socket, handler);
  }

  static async connect(path: string, options: ConnectOptions = {}): Promise<Client> {
    throwIfAborted(options.signal);
    let fd: number;
    try {
      fd = native().connectUnix(path);
    } catch (error) {
      const errno = (error as { code?: string }).code;
      throw new ClientError('CONNECT', `cannot connect to ${path}: ${errno ?? String(error)}`, { errno, cause: error });
    }
    const client = new Client(new FdSocket(fd));
    await client.#await(options.signal, () =>
      client.#channel.sendUrgent({ type: 'hello', minVersion: PROTOCOL_VERSION, maxVersion: PROTOCOL_VERSION }),
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
      const envEntries = Object.entries(env).map(([name, value]) => ({ name, value }));
      start = encodeFrame({ type: 'start', rows, cols, cwdDev: stat.dev, cwdIno: stat.ino, argv, env: envEntries });
    } catch (error) {
      closeSync(dirFd);
      if (isProtocolError(error)) throw new ClientError('BAD_START', error.message, { cause: error });
      throw new ClientError('CWD', `cannot stat ${cwd}`, { cause: error });
    }
    this.#state = 'starting';
    return (await this.#await(options.signal, () => this.#sendStart(start, dirFd))) as Session;
  }

  /** Closes the connection; a pending handshake or start rejects with CLOSED. A started session owns the
   * connection from then on: close it through the session. */
  close(): void {
    if (this.#state === 'started') return;
    this.#fail(new ClientError('CLOSED', 'the connection was closed locally'));
  }

  #sendStart(start: Buffer, dirFd: number): void {
    try {
      // The socket owns dirFd from here: it rides on START's first byte and is closed once sent.
      this.#channel.sendRaw(start, [dirFd]);
    } catch (error) {
      closeSync(dirFd);
      throw error;
    }
  }

  /** Sends, then waits for the answer the current state expects. */
  #await(signal: AbortSignal | undefined, send: () => void): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => this.#fail(new ClientError('ABORTED', 'aborted by the caller', { cause: signal?.reason }));
      const settle = () => signal?.removeEventListener('abort', onAbort);
      this.#waiter = {
        resolve: (value) => (settle(), resolve(value)),
        reject: (error) => (settle(), reject(error)),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        send();
      } catch (error) {
        this.#fail(new ClientError('IO', `cannot send: ${String(error)}`, { cause: error }));
      }
    });
  }

  #onFrame(frame: Frame): void {
    if (frame.type === 'error') return this.#fail(ClientError.fromWire(frame.code, frame.message));
    if (this.#state === 'handshake' && frame.type === 'welcome') {
      if (frame.version !== PROTOCOL_VERSION) {
        return this.#fail(new ClientError('PROTOCOL', `the server chose version ${frame.version}, not offered`));
      }
      this.#version = frame.version;
      this.#state = 'ready';
      return this.#settle(frame);
    }
    if (this.#state === 'starting' && frame.type === 'started') {
      // The session takes the channel over now, not after an await: OUTPUT may follow in the same read.
      this.#state = 'started';
      return this.#settle(new Session(this.#channel, frame));
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
