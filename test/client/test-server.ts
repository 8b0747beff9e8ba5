// A hand-driven protocol server for the client suites: a listening socket from the addon, frames read one at a time
// (polled, so the suites run on Bun as on Node).
import { closeSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { native } from '../../src/native/binding.ts';
import { PolledSocket } from './polled-socket.ts';
import {
  HEADER_SIZE,
  PROTOCOL_VERSION,
  encodeFrame,
  parseHeader,
  parsePayload,
  type Frame,
  type FrameOf,
} from '../../src/protocol/index.ts';

export interface ReceivedFrame {
  frame: Frame;
  fds: number[];
}

export class TestServer {
  readonly dir: string;
  readonly path: string;
  #listenFd: number;
  #timer: ReturnType<typeof setInterval>;
  #waiting: ((conn: ServerConnection) => void)[] = [];
  #accepted: ServerConnection[] = [];
  #all: ServerConnection[] = [];

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'opencode-pty-client-test-'));
    this.path = join(this.dir, 'supervisor.sock');
    this.#listenFd = native().listenUnix(this.path, 16);
    this.#timer = setInterval(() => this.#acceptAll(), 1);
  }

  /** The next connection, as soon as the kernel has it. */
  accept(): Promise<ServerConnection> {
    const ready = this.#accepted.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** How many connections were made so far, those the kernel still queues included. */
  get connections(): number {
    this.#acceptAll();
    return this.#all.length;
  }

  close(): void {
    clearInterval(this.#timer);
    for (const conn of this.#all) conn.close();
    closeSync(this.#listenFd);
    rmSync(this.dir, { recursive: true, force: true });
  }

  #acceptAll(): void {
    for (let fd = native().accept(this.#listenFd); fd >= 0; fd = native().accept(this.#listenFd)) {
      const conn = new ServerConnection(new PolledSocket(fd));
      this.#all.push(conn);
      const waiter = this.#waiting.shift();
      if (waiter) waiter(conn);
      else this.#accepted.push(conn);
    }
  }
}

export class ServerConnection {
  readonly socket: PolledSocket;

  constructor(socket: PolledSocket) {
    this.socket = socket;
  }

  /** Reads one whole frame frame-exact (header, then payload), with whatever fds rode on it. */
  async readFrame(maxFds = 0): Promise<ReceivedFrame> {
    const header = await this.socket.readExact(HEADER_SIZE, maxFds);
    const { type, length } = parseHeader(header.data, 'to-server', this.version);
    const fds = [...header.fds];
    let payload: Buffer = Buffer.alloc(0);
    if (length > 0) {
      const body = await this.socket.readExact(length, maxFds);
      fds.push(...body.fds);
      payload = body.data;
    }
    return { frame: parsePayload(type, payload, this.version), fds };
  }

  async expect<T extends Frame['type']>(type: T, maxFds = 0): Promise<FrameOf<T> & { fds: number[] }> {
    const { frame, fds } = await this.readFrame(maxFds);
    if (frame.type !== type) throw new Error(`expected ${type}, got ${frame.type}`);
    return { ...(frame as FrameOf<T>), fds };
  }

  /** Version 2: the INPUT bytes up to END_INPUT, which must follow them (any other frame first throws). */
  async inputUntilEnd(): Promise<string> {
    let typed = '';
    for (;;) {
      const { frame } = await this.readFrame();
      if (frame.type === 'end-input') return typed;
      if (frame.type !== 'input') throw new Error(`expected input or end-input, got ${frame.type}`);
      typed += frame.data.toString();
    }
  }

  send(frame: Frame): void {
    this.socket.write(encodeFrame(frame, this.version));
  }

  /** The version agreed in WELCOME: frames after it follow it. */
  version = PROTOCOL_VERSION;

  /** HELLO in, WELCOME out, choosing `version` (default 1). */
  async handshake(version = PROTOCOL_VERSION): Promise<FrameOf<'hello'>> {
    const hello = await this.expect('hello');
    this.send({ type: 'welcome', version });
    this.version = version;
    return hello;
  }

  /** True when nothing the client sent is waiting in the kernel (consumes a byte if something is). */
  nothingPending(): boolean {
    return native().recvmsg(this.socket.fd, Buffer.alloc(1), 0, 1, 1) === null;
  }

  close(): void {
    this.socket.close();
  }
}
