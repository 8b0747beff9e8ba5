// The client's end of a connection, speaking the protocol by hand: every frame and byte it got, waits
// for a frame or for output (bounded, with a report of what was held when one stalls), START with a
// directory fd. For unit suites (a socketpair to the code under test) and worker suites alike.
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { FrameDecoder, encodeFrame, type Frame, type FrameName, type FrameOf } from '../../src/protocol/index.ts';
import { bounded, descriptorReport } from '../worker/stall-report.ts';

/** What serves the connection, as far as a stalled wait's report needs it (a worker process). */
export interface StallReporter {
  stderr: string;
  stallReport(client: RawClient): Promise<string>;
}

export interface StartOptions {
  env?: Record<string, string>;
  rows?: number;
  cols?: number;
  /** Sent instead of the directory's fd. */
  fds?: number[];
  /** The fd whose device and inode START names, instead of the directory's. */
  statOf?: number;
}

/** The client side of a handed-off connection, speaking the protocol by hand. */
export class RawClient {
  readonly socket: FdSocket;
  readonly frames: Frame[] = [];
  output = Buffer.alloc(0);
  /** Every byte the server sent, as it came. */
  raw = Buffer.alloc(0);
  ended = false;
  readonly version: number;
  #decoder: FrameDecoder;
  #waiters: Array<() => void> = [];
  /** Grant credit back as output arrives (a reading consumer). */
  autoCredit = true;
  /** The server of this connection (a worker process), for its log in failure messages. */
  worker: StallReporter | undefined;

  /** `version`: the protocol version the server speaks on this connection; `autoCredit` as the field. */
  constructor(fd: number, version = 1, options: { autoCredit?: boolean } = {}) {
    this.version = version;
    this.autoCredit = options.autoCredit ?? true;
    this.#decoder = new FrameDecoder('to-client', version);
    this.socket = new FdSocket(fd);
    this.socket.startReading((chunk) => {
      this.raw = Buffer.concat([this.raw, chunk]);
      for (const frame of this.#decoder.push(chunk)) {
        this.frames.push(frame);
        if (frame.type === 'output') {
          this.output = Buffer.concat([this.output, frame.data]);
          if (this.autoCredit) this.send({ type: 'credit', bytes: frame.data.length });
        }
      }
      this.#wake();
    });
    const ended = () => {
      this.ended = true;
      this.socket.close();
      this.#wake();
    };
    this.socket.on('end', ended);
    this.socket.on('error', ended);
  }

  #workerLog(): string {
    return this.worker ? `; worker: ${this.worker.stderr}` : '';
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  send(frame: Frame, fds: number[] = []): void {
    this.socket.write(encodeFrame(frame, this.version), fds);
  }

  /** Sends START for `dir` with its fd attached (or the given fds instead). */
  start(dir: string, argv: string[], options: StartOptions = {}): void {
    const dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    const stat = fstatSync(options.statOf ?? dirFd, { bigint: true });
    const env = Object.entries(options.env ?? {}).map(([name, value]) => ({ name, value }));
    const frame: Frame = { type: 'start', rows: options.rows ?? 24, cols: options.cols ?? 80, cwdDev: stat.dev, cwdIno: stat.ino, argv, env };
    // The send owns (and closes) the fds it carries; `dir`'s own fd is ours to close when it stays behind.
    if (options.fds) closeSync(dirFd);
    this.send(frame, options.fds ?? [dirFd]);
  }

  /** What the worker and this process hold, for a wait that stalled; this client's own state without a worker. */
  #stallReport(): Promise<string> {
    if (this.worker) return this.worker.stallReport(this);
    return Promise.resolve(`client fd ${this.socket.fd}: ended ${this.ended}, ${this.frames.length} frames\n${descriptorReport([])}`);
  }

  /** Resolves with the first frame of that type, or rejects when the connection ends first. */
  waitFor<T extends FrameName>(type: T): Promise<FrameOf<T>> {
    return bounded(`waiting for ${type}`, this.#waitFor(type), () => this.#stallReport());
  }

  async #waitFor<T extends FrameName>(type: T): Promise<FrameOf<T>> {
    for (;;) {
      const found = this.frames.find((frame) => frame.type === type);
      if (found) return found as FrameOf<T>;
      if (this.ended) throw new Error(`connection ended before ${type}; got ${this.frames.map((f) => (f.type === 'error' ? JSON.stringify(f) : f.type)).join(',')}${this.#workerLog()}`);
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Resolves once the output contains `text`. */
  waitForOutput(text: string): Promise<string> {
    return bounded(`waiting for output ${JSON.stringify(text)}`, this.#waitForOutput(text), () => this.#stallReport());
  }

  async #waitForOutput(text: string): Promise<string> {
    for (;;) {
      const seen = this.output.toString('utf8');
      if (seen.includes(text)) return seen;
      if (this.ended) throw new Error(`connection ended before output ${JSON.stringify(text)}; output: ${JSON.stringify(seen)}`);
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Resolves when the server closed the connection. */
  closed(): Promise<void> {
    return bounded('waiting for the connection to close', this.#closed(), () => this.#stallReport());
  }

  async #closed(): Promise<void> {
    while (!this.ended) await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  /** Resolves once a frame of `type` has come (as waitFor, without the frame). */
  async frame(type: FrameName): Promise<void> {
    await this.waitFor(type);
  }

  /** The first frame of `type` that came. */
  first<T extends FrameName>(type: T): FrameOf<T> | undefined {
    return this.frames.find((frame) => frame.type === type) as FrameOf<T> | undefined;
  }

  close(): void {
    this.socket.close();
  }
}
