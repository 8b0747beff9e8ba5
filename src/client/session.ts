// One running session seen from the client: output as a stream with credit, input with backpressure, one end;
// in version 3 also its id, this connection's role and the offsets of its output.
import { Readable, Writable } from 'node:stream';
import { Limits, type Frame, type FrameOf } from '../protocol/index.ts';
import type { SessionEnd } from './session-end.ts';
import { ClientError } from './client-error.ts';
import { InputWindow, OutputWindow } from './credit.ts';
import type { ChannelHandler, FrameChannel } from './frame-channel.ts';
import { KeepState, type SessionOpening, type SessionRole } from './keep-state.ts';
import { OutputStream } from './output-stream.ts';
import { HeldEventEmitter } from './session-events.ts';

export type { SessionEnd } from './session-end.ts';

/** INPUT frames are encoded only while the socket holds less than this, so input waits in the stream. */
const SOCKET_INPUT_HIGH_WATER = 256 * 1024;

export type { SessionOpening, SessionRole } from './keep-state.ts';
export type { SessionEvents } from './session-events.ts';

interface PendingInput {
  data: Buffer;
  offset: number;
  done: (error?: Error | null) => void;
}

export class Session extends HeldEventEmitter {
  readonly unit: string;
  /** The session's id (protocol version 3: for LIST, ATTACH, STOP_SESSION); undefined with versions 1 and 2. */
  readonly id: number | undefined;
  /** True for a kept session (started with keepMs, or attached to): it outlives this connection. */
  readonly kept: boolean;
  readonly mainPid: number;
  /** The program's own PID (protocol version 2); with version 1 the server does not say, and this is mainPid. */
  readonly pid: number;
  /** The protocol version of this session. */
  readonly version: number;
  /** Environment names that did not reach the program: left out of START by this client (limits) or,
   * with protocol version 2, dropped by the server's policy. */
  readonly droppedEnv: readonly string[];
  /** The terminal's output. Ends after EXIT or STOPPED (all output delivered) and also on failure, when
   * `exit` rejects: check `exit` to tell. Credit goes back to the server only as this stream is read. */
  readonly output: Readable;
  /** The terminal's input; write() returns false while input waits for credit or the socket, like any stream. */
  readonly input: Writable;
  /** Resolves at EXIT or STOPPED; rejects with a ClientError on ERROR, a protocol violation or hang-up. */
  readonly exit: Promise<SessionEnd>;

  #channel: FrameChannel;
  #outputWindow = new OutputWindow();
  #inputWindow = new InputWindow();
  #pending: PendingInput[] = [];
  #ended = false;
  #resolveExit!: (end: SessionEnd) => void;
  #rejectExit!: (error: ClientError) => void;
  #stopping: Promise<void> | undefined;
  /** The input stream ended: END_INPUT follows the last INPUT. */
  #endInput = false;
  #endInputSent = false;
  #keep: KeepState;
  /** Made by the client when STARTED or ATTACHED arrives; takes over the channel. A Session from STARTED alone
   * (the form before version 3) is a started one, not kept. */
  constructor(channel: FrameChannel, opening: SessionOpening | FrameOf<'started'>, droppedEnv: readonly string[] = []) {
    super();
    const open: SessionOpening = 'frame' in opening ? opening : { frame: opening, kept: false };
    this.#keep = new KeepState(open);
    this.kept = this.#keep.kept;
    this.unit = open.frame.unit;
    this.mainPid = open.frame.mainPid;
    this.version = channel.version;
    const started = open.frame.type === 'started' ? open.frame : undefined;
    this.pid = started ? started.programPid ?? started.mainPid : (open.frame as FrameOf<'attached'>).programPid;
    this.id = started ? started.sessionId : (open.frame as FrameOf<'attached'>).id;
    this.droppedEnv = started ? [...droppedEnv, ...(started.droppedEnv ?? [])] : [];
    this.#channel = channel;
    this.exit = new Promise<SessionEnd>((resolve, reject) => {
      this.#resolveExit = resolve;
      this.#rejectExit = reject;
    });
    // Rejection is reported through `exit`; a caller that never looks must not crash the process.
    this.exit.catch(() => {});
    this.output = new OutputStream(() => this.#grantCredit());
    this.input = new Writable({
      highWaterMark: Limits.MAX_IO_PAYLOAD,
      write: (chunk: Buffer, _encoding, done) => this.#queueInput(chunk, done),
      // end(): END_INPUT once every byte before it is framed (version 2; version 1 has no end of input).
      final: (done) => {
        this.#endInput = true;
        this.#pumpInput();
        done();
      },
    });
    const handler: ChannelHandler = {
      frame: (frame) => this.#onFrame(frame),
      end: () => this.#fail(new ClientError('HANGUP', 'the server closed the connection before the session ended')),
      fail: (error) => this.#fail(error),
    };
    channel.setHandler(handler);
    channel.onDrain(() => this.#pumpInput());
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** This connection's role: 'control' for a started session and until another connection takes control. */
  get role(): SessionRole {
    return this.#keep.role;
  }

  /** The controller generation this connection last heard of (1 at START, +1 at each ATTACH to control). */
  get generation(): number {
    return this.#keep.generation;
  }

  /** The absolute offset just after the last output byte read from `output`: ATTACH from it to go on with
   * no byte lost or repeated (docs/protocol.md "Offsets"). A number, exact below 2^53. */
  get offset(): number {
    return this.#keep.offsets.readOffset(this.output.readableLength);
  }

  /** Whether the server can be told that input ended (protocol version 2). */
  get canEndInput(): boolean {
    return this.version >= 2;
  }

  /** Sends bytes to the terminal; false means "wait for the input stream's 'drain'". Nothing is dropped
   * while the session runs: bytes beyond the server's credit wait here. */
  write(data: string | Uint8Array): boolean {
    this.#checkControl('write');
    return this.input.write(data);
  }

  resize(rows: number, cols: number): void {
    this.#checkControl('resize');
    if (!isInRange(rows, 1, 0xffff) || !isInRange(cols, 1, 0xffff)) {
      throw new ClientError('INVALID_ARGUMENT', `terminal size ${rows}x${cols} is outside 1..65535`);
    }
    this.#control({ type: 'resize', rows, cols });
  }

  /** Sends a signal (1..64) to the session's processes. */
  signal(signo: number): void {
    this.#checkControl('signal');
    if (!isInRange(signo, 1, Limits.MAX_SIGNAL)) {
      throw new ClientError('INVALID_ARGUMENT', `signal ${signo} is outside 1..${Limits.MAX_SIGNAL}`);
    }
    this.#control({ type: 'signal', signal: signo });
  }

  /** Asks the server to end the session; resolves once it has (STOPPED, or EXIT if the program ended
   * first), rejects like `exit` on failure. Idempotent. */
  stop(): Promise<void> {
    if (this.role !== 'control' && !this.#ended) return Promise.reject(this.#keep.notController('stop', this.id));
    this.#stopping ??= (() => {
      if (!this.#ended) this.#control({ type: 'stop' });
      return this.exit.then(() => undefined);
    })();
    return this.#stopping;
  }

  /** Drops the connection without a STOP; the server treats it as the client gone and stops the unit
   * (a kept session is detached instead, as by detach()). `exit` rejects with CLOSED. */
  close(): void {
    this.#fail(new ClientError('CLOSED', 'the session was closed locally'));
  }

  /** Leaves a kept session running: closes this connection (detached, no frame) and resolves `exit` with
   * reason 'detached'. Attach again with the session's id and `offset`. */
  detach(): void {
    if (!this.kept) throw new ClientError('STATE', 'only a kept session can be detached: this one would end with its connection');
    this.#end({ reason: 'detached', code: 0, status: 0, result: 'detached' });
  }

  #checkControl(what: string): void {
    if (this.role !== 'control' && !this.#ended) throw this.#keep.notController(what, this.id);
  }

  #control(frame: Frame): void {
    if (this.#ended) return;
    this.#channel.sendUrgent(frame);
  }

  #onFrame(frame: Frame): void {
    switch (frame.type) {
      case 'output':
        if (!this.#outputWindow.receive(frame.data.length)) {
          return this.#fail(
            new ClientError(
              'FLOW',
              `the server sent ${frame.data.length} bytes of OUTPUT with ${this.#outputWindow.serverWindow} of credit`,
            ),
          );
        }
        {
          const overflow = this.#keep.offsets.receive(frame.data.length);
          if (overflow !== undefined) return this.#fail(new ClientError('PROTOCOL', overflow));
        }
        this.output.push(frame.data);
        // In flowing mode push() hands the bytes to the consumer at once: that is a read, so credit may be due.
        return this.#grantCredit();
      case 'credit':
        if (!this.#inputWindow.grant(frame.bytes)) {
          return this.#fail(new ClientError('PROTOCOL', `the server granted credit beyond ${Limits.MAX_WINDOW} bytes`));
        }
        return this.#pumpInput();
      case 'exit': {
        const { code, status, result, accounting } = frame;
        return this.#end({ reason: 'exit', code, status, result, ...(accounting ? { accounting } : {}) });
      }
      case 'stopped':
        if (frame.end) {
          const { code, status, result, accounting } = frame.end;
          return this.#end({ reason: 'stopped', code, status, result, accounting });
        }
        return this.#end({ reason: 'stopped', code: 0, status: 0, result: 'stopped' });
      case 'error':
        return this.#fail(ClientError.fromWire(frame.code, frame.message));
      case 'truncated':
        return this.#onTruncated(frame);
      case 'controller-changed':
        return this.#onControllerChanged(frame);
      default:
        return this.#fail(new ClientError('PROTOCOL', `the server sent ${frame.type.toUpperCase()} during a session`));
    }
  }

  #onTruncated(frame: FrameOf<'truncated'>): void {
    const event = this.#checked(() => this.#keep.truncate(frame));
    if (event) this.emitHeld('truncated', event);
  }

  #onControllerChanged(frame: FrameOf<'controller-changed'>): void {
    const event = this.#checked(() => this.#keep.changeController(frame));
    if (!event) return;
    // Input not yet sent was typed for a terminal this connection no longer controls: the server would
    // refuse it (NOT_CONTROLLER) and close the connection. It is dropped, and its writers released.
    if (event.role === 'observe') for (const pending of this.#pending.splice(0)) pending.done();
    this.emitHeld('controller-changed', event);
  }

  /** `apply()`'s result, or undefined once its ClientError has failed the session. */
  #checked<T>(apply: () => T): T | undefined {
    try {
      return apply();
    } catch (error) {
      this.#fail(error as ClientError);
      return undefined;
    }
  }

  #grantCredit(): void {
    if (this.#ended) return;
    const grant = this.#outputWindow.grant(this.output.readableLength);
    if (grant > 0) this.#channel.sendUrgent({ type: 'credit', bytes: grant });
  }

  #queueInput(chunk: Buffer, done: (error?: Error | null) => void): void {
    // An observer's input stream discards what is written to it (write() throws instead).
    if (this.#ended || this.role !== 'control') return done();
    if (chunk.length === 0) return done();
    this.#pending.push({ data: chunk, offset: 0, done });
    this.#pumpInput();
  }

  /** Frames waiting input as far as credit and the socket's bound allow; the stream's own buffer holds the
   * rest, so write() returns false until credit comes. */
  #pumpInput(): void {
    this.#framePending();
    if (this.#endInput && !this.#endInputSent && !this.#ended && this.#pending.length === 0 && this.canEndInput && this.role === 'control') {
      this.#endInputSent = true;
      // The data lane, behind every INPUT already framed.
      this.#channel.send({ type: 'end-input' });
    }
  }

  #framePending(): void {
    while (!this.#ended && this.role === 'control' && this.#pending.length > 0 && this.#channel.queuedBytes < SOCKET_INPUT_HIGH_WATER) {
      const head = this.#pending[0]!;
      const wanted = Math.min(head.data.length - head.offset, Limits.MAX_IO_PAYLOAD);
      const size = this.#inputWindow.take(wanted);
      if (size === 0) return;
      this.#channel.send({ type: 'input', data: head.data.subarray(head.offset, head.offset + size) });
      head.offset += size;
      if (head.offset === head.data.length) {
        this.#pending.shift();
        head.done();
      }
    }
  }

  /** The one place a session ends well: output ends (all of it was delivered before EXIT/STOPPED). */
  #end(end: SessionEnd): void {
    if (this.#ended) return;
    this.#finish();
    this.#resolveExit(end);
  }

  /** The one place a session ends badly. */
  #fail(error: ClientError): void {
    if (this.#ended) return;
    this.#finish();
    this.#rejectExit(error);
  }

  #finish(): void {
    this.#ended = true;
    this.#channel.close();
    // Input that never reached the server is void once the program is gone; its writers are released.
    for (const pending of this.#pending.splice(0)) pending.done();
    this.input.destroy();
    this.output.push(null);
  }
}

function isInRange(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}
