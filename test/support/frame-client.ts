// The client's end of a connection in unit tests: every frame it got, and a wait for the first of a type.
import { FdSocket } from '../../src/io/fd-socket.ts';
import { FrameDecoder, type Frame } from '../../src/protocol/index.ts';

export class FrameClient {
  frames: Frame[] = [];
  readonly closed: Promise<void>;
  #socket: FdSocket;
  #waiting: { type: string; resolve: () => void }[] = [];

  /** Takes `fd` and reads frames of protocol `version` from it until it closes. */
  constructor(fd: number, version = 1) {
    this.#socket = new FdSocket(fd);
    this.#socket.on('error', () => undefined);
    const decoder = new FrameDecoder('to-client', version);
    this.closed = new Promise((resolve) => this.#socket.once('end', () => resolve()));
    this.#socket.startReading((chunk) => {
      for (const frame of decoder.push(chunk)) {
        this.frames.push(frame);
        for (const waiter of this.#waiting.filter((entry) => entry.type === frame.type)) waiter.resolve();
      }
    });
  }

  /** Resolves once a frame of `type` has come. */
  frame(type: Frame['type']): Promise<void> {
    if (this.frames.some((frame) => frame.type === type)) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push({ type, resolve }));
  }

  /** The first frame of `type` that came. */
  first<T extends Frame['type']>(type: T): Extract<Frame, { type: T }> | undefined {
    return this.frames.find((frame) => frame.type === type) as Extract<Frame, { type: T }> | undefined;
  }

  close(): void {
    this.#socket.close();
  }
}
