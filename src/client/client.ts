// The client's connection: handshake, then one request: START with the cwd fd the client opened itself, or
// (version 3) LIST, ATTACH or STOP_SESSION.
import { LATEST_VERSION, PROTOCOL_VERSION, type Frame, type FrameOf } from '../protocol/index.ts';
import { ClientError, throwIfAborted } from './client-error.ts';
import type { ConnectOptions, RequestOptions, StartOptions } from './client-options.ts';
import { Deadline } from './deadline.ts';
import { FrameChannel, type ChannelHandler } from './frame-channel.ts';
import { RuntimeSocket } from './runtime-socket.ts';
import { Session, type SessionEnd } from './session.ts';
import { attachFrame, checkSessionId, keptSessionOf, needKeepVersion, type AttachOptions, type KeptSession } from './kept-sessions.ts';
import { startRequest } from './start-request.ts';

export type { AttachOptions, KeptSession, KeptSessionOrigin, KeptSessionState } from './kept-sessions.ts';
export type { ConnectOptions, RequestOptions, StartOptions } from './client-options.ts';

export { DEFAULT_TIMEOUT_MS } from './deadline.ts';

type State = 'handshake' | 'ready' | 'starting' | 'listing' | 'attaching' | 'stopping-session' | 'started' | 'closed';

interface Waiter {
  resolve: (value: unknown) => void;
  reject: (error: ClientError) => void;
}

/** Connects and completes the handshake: HELLO offering versions 1..3, then WELCOME (any of them), or ERROR →
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
  #kept = false;
  /** The offset an ATTACH asked for (undefined: from now). */
  #attachFrom: number | undefined;
  #attachId = 0;
  #attachRole = 0;

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
    this.#checkReady('start a session');
    const { frame, dirFd, droppedEnv, kept } = startRequest(options, this.#version);
    this.#droppedEnv = droppedEnv;
    this.#state = 'starting';
    this.#kept = kept;
    const deadline = new Deadline(options.timeoutMs, 'no STARTED from the server');
    return (await this.#await(options.signal, deadline, () => this.#sendStart(frame, dirFd))) as Session;
  }

  /** Version 3: this client's kept sessions (root: every one), as the server lists them. The connection is
   * done afterwards. Entries that would not fit one 64 KiB answer are left out by the server. */
  async list(options: RequestOptions = {}): Promise<KeptSession[]> {
    this.#checkReady('list sessions');
    needKeepVersion(this.#version, 'list()');
    throwIfAborted(options.signal);
    this.#state = 'listing';
    const deadline = new Deadline(options.timeoutMs, 'no SESSIONS from the server');
    const frame = (await this.#await(options.signal, deadline, () => this.#channel.sendUrgent({ type: 'list' }))) as FrameOf<'sessions'>;
    return frame.sessions.map(keptSessionOf);
  }

  /** Version 3: attaches this connection to kept session `id`; resolves with a session like start()'s at
   * ATTACHED: its output is the replay from `from`, then live output, with no byte lost or repeated. */
  async attach(id: number, options: AttachOptions = {}): Promise<Session> {
    this.#checkReady('attach');
    needKeepVersion(this.#version, 'attach()');
    const frame = attachFrame(id, options);
    throwIfAborted(options.signal);
    this.#state = 'attaching';
    this.#attachFrom = options.from === 'now' ? undefined : options.from ?? 0;
    this.#attachId = id;
    this.#attachRole = frame.role;
    const deadline = new Deadline(options.timeoutMs, 'no ATTACHED from the server');
    return (await this.#await(options.signal, deadline, () => this.#channel.sendUrgent(frame))) as Session;
  }

  /** Version 3: ends kept session `id` as a STOP would, without attaching; resolves once its unit is gone
   * (STOPPED, with how the program ended). The connection is done afterwards. */
  async stopSession(id: number, options: RequestOptions = {}): Promise<SessionEnd> {
    this.#checkReady('stop a session');
    needKeepVersion(this.#version, 'stopSession()');
    checkSessionId(id);
    throwIfAborted(options.signal);
    this.#state = 'stopping-session';
    // Stopping a unit waits for its program to go: as long a wait as a start's, at most.
    const deadline = new Deadline(options.timeoutMs, 'no STOPPED from the server');
    const frame = (await this.#await(options.signal, deadline, () => this.#channel.sendUrgent({ type: 'stop-session', id }))) as FrameOf<'stopped'>;
    const end = frame.end!;
    return { reason: 'stopped', code: end.code, status: end.status, result: end.result, accounting: end.accounting };
  }

  #checkReady(what: string): void {
    if (this.#state !== 'ready') throw this.#failure ?? new ClientError('STATE', `cannot ${what} in state ${this.#state}: one request per connection`);
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
      return this.#settle(new Session(this.#channel, { frame, kept: this.#kept }, this.#droppedEnv));
    }
    if (this.#state === 'attaching' && frame.type === 'attached') return this.#onAttached(frame);
    if ((this.#state === 'listing' && frame.type === 'sessions') || (this.#state === 'stopping-session' && frame.type === 'stopped')) {
      // The answer is the last frame of the connection: the server closes after it.
      const waiter = this.#waiter;
      this.#waiter = undefined;
      this.#fail(new ClientError('CLOSED', 'the request was answered'));
      return waiter?.resolve(frame);
    }
    this.#fail(new ClientError('PROTOCOL', `unexpected ${frame.type.toUpperCase()} while ${this.#state}`));
  }

  #onAttached(frame: FrameOf<'attached'>): void {
    if (frame.id !== this.#attachId || frame.role !== this.#attachRole) {
      return this.#fail(new ClientError('PROTOCOL', `ATTACHED names session ${frame.id} role ${frame.role}, not ${this.#attachId} role ${this.#attachRole}`));
    }
    if (this.#attachFrom !== undefined && BigInt(this.#attachFrom) > frame.next) {
      return this.#fail(new ClientError('PROTOCOL', `ATTACHED from ${this.#attachFrom}, past the session's next offset ${frame.next}`));
    }
    this.#state = 'started';
    let session: Session;
    try {
      session = new Session(this.#channel, { frame, from: this.#attachFrom });
    } catch (error) {
      this.#state = 'attaching';
      return this.#fail(error as ClientError);
    }
    this.#settle(session);
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
