// Runs the session helper as a kept session (--keep), as its unit would, and plays the worker: GO with
// a version 3 STARTED for conn 0, ATTACH with a fresh socketpair's end for each further connection,
// QUERY, TERMINATE. Every connection's frames are checked as they come (the first is STARTED or
// ATTACHED, then only OUTPUT within credit, CREDIT, TRUNCATED and CONTROLLER_CHANGED), with the
// offset of every OUTPUT byte followed, and the remainder of a DETACHED appended after the last byte
// the socket brought, as the worker writes it.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { HelperDecoder, encodeAttach, encodeQuery, type AttachRoleName, type DetachReport, type HelperMessage, type HelperState } from '../../src/control/helper-channel.ts';
import { helperPath } from '../../src/worker/helper-path.ts';
import { MAX_IO, TERMINATE, WINDOW, credit, goWith } from './helper-harness.ts';

export const FROM_NOW = 0xffff_ffff_ffff_ffffn;
export const F = { STARTED: 0x04, OUTPUT: 0x06, CREDIT: 0x0d, ATTACHED: 0x12, TRUNCATED: 0x13, CONTROLLER_CHANGED: 0x14 } as const;

/** A version 3 STARTED by hand: programPid, mainPid (0: the helper sets them), unit, no dropped names, the session id. */
export function startedV3(unit: string, id: bigint): Buffer {
  const name = Buffer.from(unit, 'latin1');
  const payload = Buffer.alloc(8 + 2 + name.length + 2 + 8);
  payload.writeUInt16BE(name.length, 8);
  name.copy(payload, 10);
  payload.writeBigUInt64BE(id, 12 + name.length);
  const header = Buffer.from([F.STARTED, 0, 0, 0, 0]);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

export interface Attached {
  id: bigint;
  role: number;
  generation: number;
  oldest: bigint;
  next: bigint;
  programPid: number;
  mainPid: number;
  unit: string;
}

export type ConnEvent =
  /** `at`: how many OUTPUT bytes the connection had received when it came. */
  | { type: 'truncated'; oldest: bigint; dropped: bigint; at: number }
  | { type: 'changed'; generation: number; role: number };

/** One connection of the kept session, from the client's side. */
export class Conn {
  readonly socket: FdSocket;
  readonly chunks: Buffer[] = [];
  readonly events: ConnEvent[] = [];
  attached: Attached | undefined;
  started: Buffer | undefined;
  /** The offset of the next OUTPUT byte; undefined until the first frame says (conn 0: 0). */
  position: bigint | undefined;
  detached: DetachReport | undefined;
  eof = false;
  received = 0;
  autoCredit: boolean;
  #raw: Buffer = Buffer.alloc(0);
  #credit = WINDOW;
  #remainderDone = false;
  #wake: () => void;
  violation: Error | undefined;

  constructor(fd: number, readonly from: bigint | 'started', wake: () => void, autoCredit: boolean) {
    this.#wake = wake;
    this.autoCredit = autoCredit;
    this.socket = new FdSocket(fd);
    this.socket.on('error', () => undefined);
    this.socket.once('end', () => {
      this.eof = true;
      this.#applyRemainder();
      this.#wake();
    });
    this.socket.startReading((chunk) => this.#onData(chunk));
  }

  get output(): Buffer {
    return Buffer.concat(this.chunks);
  }

  send(bytes: Buffer): void {
    if (!this.socket.closed) this.socket.write(bytes);
  }

  grant(bytes: number): void {
    this.#credit += bytes;
    this.send(credit(bytes));
  }

  close(): void {
    this.socket.close();
  }

  onDetached(report: DetachReport): void {
    this.detached = report;
    this.#applyRemainder();
  }

  /** The worker writes a DETACHED's remainder after everything the helper wrote itself. */
  #applyRemainder(): void {
    if (this.#remainderDone || !this.eof || !this.detached) return;
    this.#remainderDone = true;
    if (this.detached.remainder.length > 0) this.#onData(this.detached.remainder);
  }

  #fail(message: string): void {
    this.violation ??= new Error(message);
  }

  #onData(chunk: Buffer): void {
    this.#raw = this.#raw.length ? Buffer.concat([this.#raw, chunk]) : chunk;
    while (this.#raw.length >= 5 && !this.violation) {
      const type = this.#raw[0]!;
      const length = this.#raw.readUInt32BE(1);
      if (length > 65536) return this.#fail(`a frame of ${length} bytes`);
      if (this.#raw.length < 5 + length) break;
      const p = Buffer.from(this.#raw.subarray(5, 5 + length));
      this.#raw = this.#raw.subarray(5 + length);
      if (this.position === undefined) {
        if (this.from === 'started' && type === F.STARTED) {
          this.started = p;
          this.position = 0n;
        } else if (this.from !== 'started' && type === F.ATTACHED) {
          const unitLen = p.readUInt16BE(37);
          if (p.length !== 39 + unitLen) return this.#fail(`ATTACHED of ${p.length} bytes`);
          this.attached = { id: p.readBigUInt64BE(0), role: p[8]!, generation: p.readUInt32BE(9), oldest: p.readBigUInt64BE(13), next: p.readBigUInt64BE(21), programPid: p.readUInt32BE(29), mainPid: p.readUInt32BE(33), unit: p.subarray(39).toString('latin1') };
          this.position = this.from === FROM_NOW ? this.attached.next : this.from;
        } else {
          return this.#fail(`the first frame is type ${type}`);
        }
        continue;
      }
      if (type === F.OUTPUT) {
        if (length < 1 || length > MAX_IO) return this.#fail(`OUTPUT of ${length} bytes`);
        if (length > this.#credit) return this.#fail(`OUTPUT of ${length} bytes with ${this.#credit} of credit`);
        this.#credit -= length;
        this.chunks.push(p);
        this.received += length;
        this.position += BigInt(length);
        if (this.autoCredit) this.grant(length);
      } else if (type === F.CREDIT && length === 4) {
        // input credit granted back: nothing to check here
      } else if (type === F.TRUNCATED && length === 16) {
        const oldest = p.readBigUInt64BE(0);
        const dropped = p.readBigUInt64BE(8);
        if (oldest <= this.position || oldest - this.position !== dropped) return this.#fail(`TRUNCATED(${oldest}, ${dropped}) at offset ${this.position}`);
        this.position = oldest;
        this.events.push({ type: 'truncated', oldest, dropped, at: this.received });
      } else if (type === F.CONTROLLER_CHANGED && length === 5) {
        this.events.push({ type: 'changed', generation: p.readUInt32BE(0), role: p[4]! });
      } else {
        return this.#fail(`unexpected frame type ${type} of ${length} bytes`);
      }
    }
    this.#wake();
  }
}

export interface KeptOptions {
  retainBytes?: number;
  maxObservers?: number;
  sessionId?: bigint;
  writeTimeoutMs?: number;
  /** Grant credit back on conn 0 as OUTPUT arrives (default true). */
  autoCredit?: boolean;
  /** SO_SNDBUF/SO_RCVBUF of conn 0's socketpair. */
  clientBuffer?: number;
  /** Extra helper options (before ROWS). */
  extra?: string[];
  /** Send GO at once (default true); else go() does. */
  go?: boolean;
}

export interface KeptEnded {
  code: number | null;
  signal: NodeJS.Signals | null;
  end: Extract<HelperMessage, { type: 'end' }>['report'] | undefined;
}

export class KeptRun {
  readonly child: ChildProcess;
  readonly control: FdSocket;
  readonly messages: HelperMessage[] = [];
  readonly conns = new Map<number, Conn>();
  readonly decoder: HelperDecoder;
  readonly ended: Promise<KeptEnded>;
  readonly retainBytes: number;
  #waiters: (() => void)[] = [];
  #closed = false;
  #violation: Error | undefined;

  constructor(argv: string[], options: KeptOptions = {}) {
    this.retainBytes = options.retainBytes ?? 2 << 20;
    this.decoder = new HelperDecoder({ kept: { retainBytes: this.retainBytes } });
    const dirFd = openSync(tmpdir(), 'r');
    const [clientOurs, clientTheirs] = native().socketpair(options.clientBuffer);
    const [controlOurs, controlTheirs] = native().socketpair();
    const id = options.sessionId ?? 42n;
    const pre = ['--protocol=3', '--keep', `--session-id=${id}`, `--retain-bytes=${this.retainBytes}`];
    if (options.maxObservers !== undefined) pre.push('--max-observers', String(options.maxObservers));
    if (options.writeTimeoutMs) pre.push(`--write-timeout-ms=${options.writeTimeoutMs}`);
    this.child = spawn(helperPath(), [...pre, ...(options.extra ?? []), ...argv], { stdio: [dirFd, clientTheirs, controlTheirs] });
    closeSync(dirFd);
    closeSync(clientTheirs);
    closeSync(controlTheirs);
    this.conns.set(0, new Conn(clientOurs, 'started', () => this.#wake(), options.autoCredit ?? true));
    this.control = new FdSocket(controlOurs);
    this.control.on('error', () => undefined);
    this.control.startReading((chunk) => {
      const { messages, fault } = this.decoder.push(chunk);
      for (const m of messages) {
        this.messages.push(m);
        if (m.type === 'detached') this.conns.get(m.report.conn)?.onDetached(m.report);
      }
      if (fault) this.#violation ??= fault;
      this.#wake();
    });
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => this.child.on('exit', (code, signal) => resolve([code, signal])));
    const controlEnd = new Promise<void>((resolve) => {
      this.control.once('end', resolve);
      this.control.once('error', () => resolve());
    });
    this.ended = Promise.all([exited, controlEnd]).then(([[code, signal]]) => {
      this.#closed = true;
      this.#wake();
      const violation = this.#violation ?? [...this.conns.values()].find((c) => c.violation)?.violation;
      if (violation) throw violation;
      const end = this.messages.find((m) => m.type === 'end');
      return { code, signal, end: end?.type === 'end' ? end.report : undefined };
    });
    this.ended.catch(() => {});
    this.#go = goWith(startedV3('pty-keep.service', id));
    if (options.go ?? true) this.go();
  }

  readonly #go: Buffer;

  go(): void {
    this.control.write(this.#go);
  }

  conn(n: number): Conn {
    const conn = this.conns.get(n);
    if (!conn) throw new Error(`no conn ${n}`);
    return conn;
  }

  /** ATTACH with a fresh socketpair: the helper gets one end (the fd rides on the message), the test the other. */
  attach(conn: number, role: AttachRoleName, fromOffset: bigint, options: { rows?: number; cols?: number; autoCredit?: boolean } = {}): Conn {
    const [ours, theirs] = native().socketpair();
    const c = new Conn(ours, fromOffset, () => this.#wake(), options.autoCredit ?? true);
    this.conns.set(conn, c);
    this.decoder.attached(conn);
    this.control.write(encodeAttach({ conn, role, fromOffset, rows: options.rows ?? 24, cols: options.cols ?? 80 }), [theirs]);
    return c;
  }

  async query(): Promise<HelperState> {
    const before = this.messages.filter((m) => m.type === 'state').length;
    this.decoder.queried();
    this.control.write(encodeQuery());
    await this.until('a STATE', () => this.messages.filter((m) => m.type === 'state').length > before);
    const state = this.messages.filter((m) => m.type === 'state')[before]!;
    return (state as Extract<HelperMessage, { type: 'state' }>).state;
  }

  terminate(): void {
    this.control.write(TERMINATE);
  }

  detachedOf(conn: number): DetachReport | undefined {
    return this.conns.get(conn)?.detached;
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Resolves once `check` holds, checked after every arrival; rejects on a violation or if the helper ends first. */
  async until(what: string, check: () => boolean): Promise<void> {
    for (;;) {
      if (check()) return;
      const violation = this.#violation ?? [...this.conns.values()].find((c) => c.violation)?.violation;
      if (violation) throw violation;
      if (this.#closed) throw new Error(`helper ended before ${what}`);
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }
}
