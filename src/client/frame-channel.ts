// Frames over the client's runtime socket: decodes what the server sends, encodes what we send, maps failures to codes.
import { FrameDecoder, encodeFrame, isProtocolError, type Frame } from '../protocol/index.ts';
import { ClientError } from './client-error.ts';
import { closeQuietly } from '../io/index.ts';
import type { RuntimeSocket } from './runtime-socket.ts';

export interface ChannelHandler {
  frame(frame: Frame): void;
  /** The server closed its side cleanly between frames. */
  end(): void;
  /** The connection failed; the channel is closed already. */
  fail(error: ClientError): void;
}

export class FrameChannel {
  #socket: RuntimeSocket;
  #decoder = new FrameDecoder('to-client');
  #handler: ChannelHandler;
  #drainListeners = new Set<() => void>();

  constructor(socket: RuntimeSocket, handler: ChannelHandler) {
    this.#socket = socket;
    this.#handler = handler;
    socket.on('error', (error) => this.#fail(error));
    socket.on('end', () => this.#onEnd());
    socket.on('drain', () => {
      for (const listener of this.#drainListeners) listener();
    });
    // Server frames never carry fds: the runtime reads with no room for control data, so the kernel
    // discards any fd a server attaches (unix(7): SCM_RIGHTS without space is dropped, MSG_CTRUNC).
    socket.startReading((chunk) => this.#onData(chunk));
  }

  /** The protocol version frames follow from now on (set at WELCOME). */
  get version(): number {
    return this.#decoder.version;
  }

  set version(version: number) {
    this.#decoder.version = version;
  }

  /** Routes later frames elsewhere (the session takes over after STARTED). */
  setHandler(handler: ChannelHandler): void {
    this.#handler = handler;
  }

  get closed(): boolean {
    return this.#socket.closed;
  }

  /** Bytes encoded but not yet taken by the kernel. */
  get queuedBytes(): number {
    return this.#socket.writableLength;
  }

  onDrain(listener: () => void): void {
    this.#drainListeners.add(listener);
  }

  /** Queues a data frame behind earlier data. */
  send(frame: Frame): void {
    this.#socket.write(encodeFrame(frame, this.#decoder.version));
  }

  /** Sends an encoded frame with fds on its first byte, once everything before it has gone; closes the
   * fds either way. Rejects with a ClientError. */
  async sendWithFds(encoded: Buffer, fds: number[]): Promise<void> {
    try {
      await this.#socket.flushed();
    } catch (error) {
      for (const fd of fds) closeQuietly(fd);
      throw error;
    }
    this.#socket.writeWithFds(encoded, fds);
  }

  /** Queues a control frame ahead of waiting data. */
  sendUrgent(frame: Frame): void {
    this.#socket.writeUrgent(encodeFrame(frame, this.#decoder.version));
  }

  close(): void {
    this.#drainListeners.clear();
    this.#socket.close();
  }

  #onData(chunk: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.#decoder.push(chunk);
    } catch (error) {
      return this.#fail(fromDecodeError(error));
    }
    for (const frame of frames) {
      // A handler may end the connection in the middle of a batch; later frames no longer matter.
      if (this.#socket.closed) return;
      this.#handler.frame(frame);
    }
  }

  #onEnd(): void {
    try {
      this.#decoder.end();
    } catch (error) {
      return this.#fail(fromDecodeError(error));
    }
    this.close();
    this.#handler.end();
  }

  #fail(error: ClientError): void {
    if (this.#socket.closed) return;
    this.close();
    this.#handler.fail(error);
  }
}

function fromDecodeError(error: unknown): ClientError {
  const detail = isProtocolError(error) ? `${error.code}: ${error.message}` : String(error);
  return new ClientError('PROTOCOL', `the server sent an invalid frame (${detail})`, { cause: error });
}
