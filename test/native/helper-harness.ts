// Runs the session helper as a plain child process, as its unit would: fd 0 a directory, fd 1 the
// client's socket, fd 2 the control channel. Plays both the client and the worker with bytes built by
// hand (never the protocol's encoder), and checks everything the helper writes to the client.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { HelperDecoder, type EndReport, type HelperMessage } from '../../src/control/helper-channel.ts';
import { helperPath } from '../../src/worker/helper-path.ts';

export const T = { HELLO: 0x01, START: 0x03, INPUT: 0x05, OUTPUT: 0x06, RESIZE: 0x07, SIGNAL: 0x08, STOP: 0x09, CREDIT: 0x0d, END_INPUT: 0x0e } as const;
export const MAX_IO = 32768;
export const WINDOW = 262144;

/** 1 byte type, 4 bytes length BE, payload. */
export function frame(type: number, payload: Buffer | string = Buffer.alloc(0)): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload;
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

export function resize(rows: number, cols: number): Buffer {
  const body = Buffer.alloc(4);
  body.writeUInt16BE(rows, 0);
  body.writeUInt16BE(cols, 2);
  return frame(T.RESIZE, body);
}

export function credit(bytes: number): Buffer {
  const body = Buffer.alloc(4);
  body.writeUInt32BE(bytes >>> 0);
  return frame(T.CREDIT, body);
}

export const signal = (n: number) => frame(T.SIGNAL, Buffer.from([n]));
export const input = (text: string | Buffer) => frame(T.INPUT, text);
export const END_INPUT = frame(T.END_INPUT);
const command = (type: number) => Buffer.from([type, 0, 0, 0, 0]);

/** A STARTED frame by hand (docs/protocol.md), pids zero (the helper sets them); `dropped` in version 2 only. */
export function startedFrame(version: number, unit = 'pty-1.service', dropped: string[] = []): Buffer {
  const name = Buffer.from(unit, 'latin1');
  const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
  const names = dropped.map((entry) => {
    const bytes = Buffer.from(entry, 'latin1');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  });
  const payload = version >= 2 ? Buffer.concat([Buffer.alloc(8), u16(name.length), name, u16(dropped.length), ...names]) : Buffer.concat([Buffer.alloc(4), name]);
  const header = Buffer.from([0x04, 0, 0, 0, 0]);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** GO carrying the STARTED frame the helper writes first. */
export function goWith(started: Buffer): Buffer {
  const header = Buffer.from([0x01, 0, 0, 0, 0]);
  header.writeUInt32BE(started.length, 1);
  return Buffer.concat([header, started]);
}
export const TERMINATE = command(0x02);

export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: Buffer;
  report: EndReport | undefined;
  logs: string[];
}

export interface RunOptions {
  dir?: string;
  dirFd?: number;
  /** Send GO at once (default true). */
  go?: boolean;
  /** GO's STARTED frame (by default startedFrame() of the version in `options`): the client must see it
   * first, whole, and nothing before it. */
  started?: Buffer;
  /** Grant credit back for every OUTPUT as it arrives (default true). */
  autoCredit?: boolean;
  writeTimeoutMs?: number;
  /** Options before ROWS (default: none, so the helper's defaults are exercised). */
  options?: string[];
  /** SO_SNDBUF/SO_RCVBUF of the client socketpair (a tiny one makes the helper's sends stop inside a frame). */
  clientBuffer?: number;
  /** Run as this uid and gid instead of ours. */
  as?: number;
  /** A command the helper runs under (e.g. `unshare --pid --fork`): the helper's path and argv follow it. */
  wrap?: string[];
}

/** One helper run. Fails `ended` on anything on the client socket that is not a well-formed OUTPUT or CREDIT
 * within the credit granted, and on anything on the control channel that is not a valid message. */
export class HelperRun {
  readonly child: ChildProcess;
  readonly client: FdSocket;
  readonly control: FdSocket;
  readonly ended: Promise<Ended>;
  readonly messages: HelperMessage[] = [];
  /** Input credit the helper granted back. */
  granted = 0;
  #raw: Buffer = Buffer.alloc(0);
  #chunks: Buffer[] = [];
  #text = '';
  #credit = WINDOW;
  #autoCredit: boolean;
  #waiters: (() => void)[] = [];
  #closed = false;
  #violation: Error | undefined;
  #decoder = new HelperDecoder();
  #expectStarted: Buffer;
  /** The STARTED frame the helper wrote (header included), when GO carried one. */
  started: Buffer | undefined;

  constructor(argv: string[], options: RunOptions = {}) {
    const dirFd = options.dirFd ?? openSync(options.dir ?? tmpdir(), 'r');
    const [clientOurs, clientTheirs] = native().socketpair(options.clientBuffer);
    const [controlOurs, controlTheirs] = native().socketpair();
    const pre = options.options ?? (options.writeTimeoutMs ? [`--write-timeout-ms=${options.writeTimeoutMs}`] : []);
    const [command, ...prefix] = [...(options.wrap ?? []), helperPath()];
    this.child = spawn(command!, [...prefix, ...pre, ...argv], { stdio: [dirFd, clientTheirs, controlTheirs], uid: options.as, gid: options.as });
    if (options.dirFd === undefined) closeSync(dirFd);
    closeSync(clientTheirs);
    closeSync(controlTheirs);
    this.#autoCredit = options.autoCredit ?? true;
    this.#expectStarted = options.started ?? startedFrame(pre.includes('--protocol=2') ? 2 : 1);
    this.client = new FdSocket(clientOurs);
    this.control = new FdSocket(controlOurs);
    this.client.on('error', () => undefined);
    this.control.on('error', () => undefined);
    this.client.startReading((chunk) => this.#onData(chunk));
    this.control.startReading((chunk) => {
      const { messages, fault } = this.#decoder.push(chunk);
      this.messages.push(...messages);
      if (fault) this.#violation ??= fault;
      this.#wake();
    });
    // The end: the helper exited and both sockets reached EOF, so everything it sent has been read.
    const eof = (socket: FdSocket) => new Promise<void>((resolve) => {
      socket.once('end', resolve);
      socket.once('error', () => resolve());
    });
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => this.child.on('exit', (code, signal) => resolve([code, signal])));
    this.ended = new Promise((resolve, reject) => {
      void Promise.all([exited, eof(this.client), eof(this.control)]).then(([[code, signal]]) => {
        this.#closed = true;
        const end = this.messages.find((m) => m.type === 'end');
        // As the worker does: the rest of the frame the helper was writing follows what it wrote.
        if (end?.type === 'end' && end.report.remainder.length > 0) this.#onData(end.report.remainder);
        this.#wake();
        if (this.#raw.length > 0) this.#violation ??= new Error(`${this.#raw.length} bytes of a partial frame at the end`);
        if (this.#violation) return reject(this.#violation);
        const logs = this.messages.flatMap((m) => (m.type === 'log' ? [m.text] : []));
        resolve({ code, signal, output: Buffer.concat(this.#chunks), report: end?.type === 'end' ? end.report : undefined, logs });
      });
    });
    this.ended.catch(() => {});
    if (options.go ?? true) this.go();
  }

  go(): void {
    this.control.write(goWith(this.#expectStarted));
  }

  send(bytes: Buffer, fds: number[] = []): void {
    this.client.write(bytes, fds);
  }

  grant(bytes: number): void {
    this.#credit += bytes;
    this.send(credit(bytes));
  }

  get received(): number {
    return this.#chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  }

  get text(): string {
    return this.#text;
  }

  #onData(chunk: Buffer): void {
    this.#raw = this.#raw.length ? Buffer.concat([this.#raw, chunk]) : chunk;
    while (this.#raw.length >= 5 && !this.#violation) {
      const type = this.#raw[0]!;
      const length = this.#raw.readUInt32BE(1);
      if (!this.started) {
        if (type !== 0x04 || length !== this.#expectStarted.length - 5) {
          this.#violation = new Error(`the first frame is not the STARTED of GO: type ${type}, length ${length}`);
          break;
        }
        if (this.#raw.length < 5 + length) break;
        this.started = Buffer.from(this.#raw.subarray(0, 5 + length));
        this.#raw = this.#raw.subarray(5 + length);
        continue;
      }
      const ok = (type === T.OUTPUT && length >= 1 && length <= MAX_IO) || (type === T.CREDIT && length === 4);
      if (!ok) {
        this.#violation = new Error(`not an OUTPUT or CREDIT frame: type ${type}, length ${length}`);
        break;
      }
      if (this.#raw.length < 5 + length) break;
      const payload = Buffer.from(this.#raw.subarray(5, 5 + length));
      this.#raw = this.#raw.subarray(5 + length);
      if (type === T.CREDIT) {
        this.granted += payload.readUInt32BE(0);
        continue;
      }
      if (length > this.#credit) this.#violation = new Error(`OUTPUT of ${length} bytes with ${this.#credit} of credit`);
      this.#credit -= length;
      this.#chunks.push(payload);
      this.#text += payload.toString('latin1');
      if (this.#autoCredit) this.grant(length);
    }
    this.#wake();
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Resolves once `check` holds, checked after every arrival; rejects if the helper ends first. */
  async until(what: string, check: () => boolean): Promise<void> {
    for (;;) {
      if (check()) return;
      if (this.#violation) throw this.#violation;
      if (this.#closed) throw new Error(`helper ended before ${what}; output ${JSON.stringify(this.#text.slice(-200))}`);
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  waitFor(text: string): Promise<void> {
    return this.until(JSON.stringify(text), () => this.#text.includes(text));
  }

  waitForMessage(type: HelperMessage['type']): Promise<void> {
    return this.until(`a ${type} message`, () => this.messages.some((m) => m.type === type));
  }
}

export const sh = (script: string) => ['24', '80', 'sh', '-c', script];
export const lines = (text: string) => text.split(/\r?\n/).filter(Boolean);
