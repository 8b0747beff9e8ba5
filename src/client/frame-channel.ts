// Frames over one FdSocket for the client: decodes what the server sends, encodes what we send, maps failures to codes.
import { FdSocket } from '../io/fd-socket.ts';
import type { IoError } from '../io/io-error.ts';
import { FrameDecoder, encodeFrame, isProtocolError, type Frame } from '../protocol/index.ts';
import { ClientError } from './client-error.ts';

export interface ChannelHandler {
  frame(frame: Frame): void;
  /** The server closed its side cleanly between frames. */
  end(): void;
  /** The connection failed; the channel is closed already. */
  fail(error: ClientError): void;
}

export class FrameChannel {
  #socket: FdSocket;
  #decoder = new FrameDecoder('to-client');
  #handler: ChannelHandler;
  #drainListeners = new Set<() => void>();

  constructor(socket: FdSocket, handler: ChannelHandler) {
    this.#socket = socket;
    this.#handler = handler;
    socket.on('error', (error) => this.#fail(fromIoError(error)));
    socket.on('end', () => this.#onEnd());
    socket.on('drain', () => {
      for (const listener of this.#drainListeners) listener();
    });
    // Server frames never carry fds: streaming reads close and report any that come.
    socket.startReading((chunk) => this.#onData(chunk));
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
    this.#socket.write(encodeFrame(frame));
  }

  /** Queues an encoded frame with fds attached to its first byte; the socket owns them once this returns
   * (and closes them once sent); if it throws they are still the caller's. */
  sendRaw(encoded: Buffer, fds: number[]): void {
    this.#socket.write(encoded, fds);
  }

  /** Queues a control frame ahead of waiting data. */
  sendUrgent(frame: Frame): void {
    this.#socket.writeUrgent(encodeFrame(frame));
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

function fromIoError(error: IoError): ClientError {
  switch (error.code) {
    case 'UNEXPECTED_FD':
    case 'UNEXPECTED_CONTROL':
      return new ClientError('PROTOCOL', 'the server sent control data (an fd) on the stream', { cause: error });
    case 'PEER_GONE':
    case 'EOF':
      return new ClientError('HANGUP', 'the server closed the connection', { errno: error.errno, cause: error });
    default:
      return new ClientError('IO', `socket failure: ${error.message}`, { errno: error.errno, cause: error });
  }
}
