// The data phase of one session: client frames ⇄ session helper frames, with credit both ways.
//
// Output is read from the helper only while the client has credit and its socket queue is short,
// so a slow client throttles the program through the terminal and a paused client loses nothing.
// Input is bounded by the credit we grant, and granted back only once the helper has taken it.
import type { FdSocket } from '../io/fd-socket.ts';
import { ErrorCode, FrameDecoder, Limits, encodeFrame, isProtocolError, type ErrorCodeValue, type Frame } from '../protocol/index.ts';
import { FlowError, ReceiveWindow, SendWindow } from '../protocol/credit.ts';
import { writeFinalFrame } from './final-frame.ts';
import { SessionError } from '../protocol/session-error.ts';

export interface RelayEvents {
  stop(): void;
  signal(signal: number): void;
  failed(error: SessionError): void;
  clientGone(): void;
}

export interface RelayOptions {
  writeTimeoutMs: number;
}

/** Output queued toward the client beyond this pauses reading from the helper until it drains. */
const CLIENT_HIGH_WATER = Limits.INITIAL_WINDOW;
/** Input credit is granted back in batches of at least this much. */
const GRANT_THRESHOLD = Limits.INITIAL_WINDOW / 4;

export class Relay {
  #client: FdSocket;
  #helper: FdSocket;
  #events: RelayEvents;
  #options: RelayOptions;
  #clientDecoder = new FrameDecoder('to-server');
  #helperDecoder = new FrameDecoder('to-client');
  #receive = new ReceiveWindow();
  #send = new SendWindow();
  /** Input bytes handed to the helper socket's queue but not yet to the kernel. */
  #inputInFlight = 0;
  #pending: Buffer[] = [];
  #helperEnded = false;
  #helperInputGone = false;
  #inputClosed = false;
  /** Set by finish(): nothing more is read from the helper or queued for the client. */
  #finishing = false;
  /** The latest RESIZE not yet handed to the helper: a flood of them collapses into one. */
  #pendingResize: Buffer | undefined;
  #writeTimer: NodeJS.Timeout | undefined;
  #drainWaiters = new Set<() => void>();
  #closed = false;

  constructor(client: FdSocket, helper: FdSocket, options: RelayOptions, events: RelayEvents) {
    this.#client = client;
    this.#helper = helper;
    this.#options = options;
    this.#events = events;
  }

  start(): void {
    const client = this.#client;
    const helper = this.#helper;
    client.on('hangup', () => this.#events.clientGone());
    client.on('end', () => this.#events.clientGone());
    client.on('error', (error) =>
      error.code === 'UNEXPECTED_FD' || error.code === 'UNEXPECTED_CONTROL'
        ? this.#fail(ErrorCode.PROTOCOL, 'a descriptor may only travel with START')
        : this.#events.clientGone(),
    );
    client.on('drain', () => {
      this.#clearWriteTimer();
      this.#pump();
      this.#checkDrained();
    });
    helper.on('drain', () => {
      this.#flushResize();
      this.#grantInput();
    });
    helper.on('end', () => this.#helperDone());
    // A helper that stopped reading for good is reported by the read side, after its last output
    // (FdSocket holds write failures back while reading); later input is simply dropped.
    helper.on('error', (error) => (error.syscall === 'sendmsg' ? (this.#helperInputGone = true) : this.#helperDone()));
    client.startReading((chunk) => this.#onClientData(chunk));
    helper.startReading((chunk) => this.#onHelperData(chunk));
  }

  /** After STOP: later INPUT, RESIZE and SIGNAL are discarded (INPUT still counts against credit). */
  closeInput(): void {
    this.#inputClosed = true;
  }

  /** Resolves true once the helper's output has ended and all of it reached the client's socket, false at the deadline. */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.#drained()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (drained: boolean) => {
        clearTimeout(timer);
        this.#drainWaiters.delete(onDrained);
        resolve(drained);
      };
      const onDrained = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.#drainWaiters.add(onDrained);
    });
  }

  /** Drops output still waiting for credit and sends the session's last frame (see writeFinalFrame). */
  finish(frame: Frame, timeoutMs: number): Promise<boolean> {
    this.#finishing = true;
    this.#pending = [];
    this.#helper.pauseReading();
    // Nothing queued earlier may follow the last frame (after a drain timeout, output is given up).
    this.#client.discardQueued();
    return writeFinalFrame(this.#client, frame, timeoutMs);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearWriteTimer();
    for (const waiter of this.#drainWaiters) waiter();
    this.#drainWaiters.clear();
  }

  #onClientData(chunk: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.#clientDecoder.push(chunk);
    } catch (error) {
      const code = isProtocolError(error) ? (error.wireCode as ErrorCodeValue) : ErrorCode.PROTOCOL;
      return this.#fail(code, `protocol error: ${(error as Error).message}`);
    }
    for (const frame of frames) {
      if (this.#closed) return;
      try {
        this.#onClientFrame(frame);
      } catch (error) {
        if (error instanceof FlowError) return this.#fail(ErrorCode.FLOW, error.message);
        // QUEUE_FULL or a closed helper socket: end the session rather than the process.
        return this.#fail(ErrorCode.INTERNAL, `relay failed: ${(error as Error).message}`);
      }
    }
  }

  #onClientFrame(frame: Frame): void {
    switch (frame.type) {
      case 'input':
        // Bounded by our credit (INITIAL_WINDOW), so the helper's queue stays far below its bound.
        this.#receive.receive(frame.data.length);
        if (this.#inputClosed || this.#helperInputGone) return this.#consumeInput(frame.data.length);
        this.#helper.write(encodeFrame(frame));
        this.#inputInFlight += frame.data.length;
        return this.#grantInput();
      case 'resize':
        if (this.#inputClosed || this.#helperInputGone) return;
        this.#pendingResize = encodeFrame(frame);
        return this.#flushResize();
      case 'signal':
        if (!this.#inputClosed) this.#events.signal(frame.signal);
        return;
      case 'stop':
        if (!this.#inputClosed) this.#events.stop();
        return;
      case 'credit':
        if (!this.#send.grant(frame.bytes)) return this.#fail(ErrorCode.FLOW, `credit beyond the ${Limits.MAX_WINDOW}-byte window`);
        return this.#pump();
      default:
        return this.#fail(ErrorCode.PROTOCOL, `protocol error: unexpected ${frame.type.toUpperCase()} frame during a session`);
    }
  }

  /** Hands the latest size to the helper once its queue is empty, so sizes never pile up there. */
  #flushResize(): void {
    if (!this.#pendingResize || this.#helper.writableLength > 0 || this.#helper.closed) return;
    const resize = this.#pendingResize;
    this.#pendingResize = undefined;
    this.#helper.writeUrgent(resize);
  }

  /** Grants input credit back once the helper socket has taken the bytes. */
  #grantInput(): void {
    if (this.#inputInFlight === 0 || this.#helper.writableLength > 0) return;
    const taken = this.#inputInFlight;
    this.#inputInFlight = 0;
    this.#consumeInput(taken);
  }

  #consumeInput(bytes: number): void {
    const grant = this.#receive.consume(bytes, GRANT_THRESHOLD);
    if (grant > 0 && !this.#client.closed) this.#client.writeUrgent(encodeFrame({ type: 'credit', bytes: grant }));
  }

  #onHelperData(chunk: Buffer): void {
    if (this.#finishing) return;
    let frames: Frame[];
    try {
      frames = this.#helperDecoder.push(chunk);
    } catch (error) {
      return this.#fail(ErrorCode.INTERNAL, `session helper sent a malformed frame: ${(error as Error).message}`);
    }
    for (const frame of frames) {
      if (frame.type !== 'output') return this.#fail(ErrorCode.INTERNAL, `session helper sent an unexpected ${frame.type} frame`);
      this.#pending.push(frame.data);
    }
    this.#pump();
  }

  /** Moves pending output to the client within its credit; reads the helper only when nothing waits. */
  #pump(): void {
    if (this.#closed || this.#finishing || this.#client.closed) return;
    while (this.#pending.length > 0 && this.#client.writableLength < CLIENT_HIGH_WATER) {
      const head = this.#pending[0]!;
      const allowed = this.#send.take(head.length);
      if (allowed === 0) break;
      this.#client.write(encodeFrame({ type: 'output', data: head.subarray(0, allowed) }));
      if (allowed === head.length) this.#pending.shift();
      else this.#pending[0] = head.subarray(allowed);
    }
    if (this.#client.writableLength > 0) this.#armWriteTimer();
    const idle = this.#pending.length === 0 && this.#client.writableLength < CLIENT_HIGH_WATER;
    if (this.#helperEnded) this.#checkDrained();
    else if (idle) this.#helper.resumeReading();
    else this.#helper.pauseReading();
  }

  #helperDone(): void {
    if (this.#helperEnded) return;
    this.#helperEnded = true;
    this.#pump();
  }

  #drained(): boolean {
    return this.#helperEnded && this.#pending.length === 0 && this.#client.writableLength === 0;
  }

  #checkDrained(): void {
    if (!this.#drained()) return;
    for (const waiter of [...this.#drainWaiters]) waiter();
  }

  /** A client that granted credit must also read: queued output older than the write timeout ends the session. */
  #armWriteTimer(): void {
    this.#writeTimer ??= setTimeout(() => {
      this.#writeTimer = undefined;
      if (this.#client.writableLength > 0) this.#fail(ErrorCode.FLOW, 'client did not read its output within the write timeout');
    }, this.#options.writeTimeoutMs);
  }

  #clearWriteTimer(): void {
    clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
  }

  #fail(code: ErrorCodeValue, message: string): void {
    if (this.#closed) return;
    this.#events.failed(new SessionError(code, message));
  }
}
