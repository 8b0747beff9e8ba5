// The push decoder: bytes in any chunking → whole frames, every length checked before payload is buffered.
import { HEADER_SIZE, type FrameTypeCode } from './constants.ts';
import type { Direction, Frame } from './frames.ts';
import { ProtocolError } from './errors.ts';
import { parseHeader } from './layout.ts';
import { parseFrame } from './parse.ts';

export { parsePayload } from './parse.ts';

const EMPTY = Buffer.alloc(0);

/**
 * Decodes the frames one peer sends (`direction` is theirs: 'to-server' in the server). Two states,
 * header and payload, one method each. A frame's length is judged the moment its header is complete,
 * so an unknown, misdirected or oversize frame costs at most HEADER_SIZE buffered bytes, and a
 * payload buffer is never larger than a length already found valid. The first error is final:
 * every later push rethrows it, since the stream position is lost. Frames completed earlier in the
 * chunk that fails are not returned: the connection is ending with an ERROR anyway.
 */
export class FrameDecoder {
  readonly #direction: Direction;
  #version: number;
  readonly #header = Buffer.alloc(HEADER_SIZE);
  #headerFilled = 0;
  #inPayload = false;
  #type: FrameTypeCode | undefined;
  #length = 0;
  /** Allocated only when a payload spans chunks; otherwise parsed in place from the chunk. */
  #payload: Buffer | undefined;
  #payloadFilled = 0;
  #error: unknown;
  #failed = false;

  /** `version`: the protocol version the frames follow; HELLO, WELCOME and ERROR are the same in all. */
  constructor(direction: Direction, version = 1) {
    this.#direction = direction;
    this.#version = version;
  }

  get version(): number {
    return this.#version;
  }

  /** Switches to the version agreed in WELCOME, for every frame after it. */
  set version(version: number) {
    this.#version = version;
  }

  /** Bytes received of the frame not yet complete (its header and payload so far); 0 between frames. */
  get buffered(): number {
    return this.#inPayload ? HEADER_SIZE + this.#payloadFilled : this.#headerFilled;
  }

  /**
   * Bytes still missing to complete the current header or payload: a reader that must stop exactly
   * at a frame boundary (to see which frame an fd arrived with) reads at most this many.
   */
  get needed(): number {
    if (this.#failed) return 0;
    return this.#inPayload ? this.#length - this.#payloadFilled : HEADER_SIZE - this.#headerFilled;
  }

  /** True between frames: nothing of a frame has arrived yet. */
  get atBoundary(): boolean {
    return !this.#failed && !this.#inPayload && this.#headerFilled === 0;
  }

  /** The error that ended this decoder, if any. */
  get error(): ProtocolError | undefined {
    return this.#failed && this.#error instanceof ProtocolError ? this.#error : undefined;
  }

  /** Every frame completed by `chunk`. The chunk is not retained: the caller may reuse it. */
  push(chunk: Buffer): Frame[] {
    if (this.#failed) throw this.#error;
    const frames: Frame[] = [];
    try {
      let offset = 0;
      while (offset < chunk.length) {
        offset = this.#inPayload ? this.#readPayload(chunk, offset, frames) : this.#readHeader(chunk, offset, frames);
      }
    } catch (error) {
      this.#fail(error);
      throw error;
    }
    return frames;
  }

  /** At end of stream: throws BAD_LENGTH if the peer stopped in the middle of a frame. */
  end(): void {
    if (this.#failed) throw this.#error;
    if (this.buffered > 0) {
      const error = new ProtocolError('BAD_LENGTH', `stream ended inside a frame (${this.buffered} bytes buffered)`);
      this.#fail(error);
      throw error;
    }
  }

  #readHeader(chunk: Buffer, offset: number, frames: Frame[]): number {
    const n = Math.min(HEADER_SIZE - this.#headerFilled, chunk.length - offset);
    chunk.copy(this.#header, this.#headerFilled, offset, offset + n);
    this.#headerFilled += n;
    if (this.#headerFilled < HEADER_SIZE) return offset + n;
    const { type, length } = parseHeader(this.#header, this.#direction, this.#version);
    this.#headerFilled = 0;
    if (length === 0) {
      frames.push(parseFrame(type, EMPTY, true, this.#version));
    } else {
      this.#inPayload = true;
      this.#type = type;
      this.#length = length;
    }
    return offset + n;
  }

  #readPayload(chunk: Buffer, offset: number, frames: Frame[]): number {
    const type = this.#type as FrameTypeCode;
    const available = chunk.length - offset;
    if (this.#payload === undefined && available >= this.#length) {
      // The whole payload is in this chunk: parse in place; parseFrame copies what a frame keeps.
      const end = offset + this.#length;
      this.#inPayload = false;
      frames.push(parseFrame(type, chunk.subarray(offset, end), false, this.#version));
      return end;
    }
    this.#payload ??= Buffer.allocUnsafe(this.#length);
    const n = Math.min(available, this.#length - this.#payloadFilled);
    chunk.copy(this.#payload, this.#payloadFilled, offset, offset + n);
    this.#payloadFilled += n;
    if (this.#payloadFilled === this.#length) {
      const payload = this.#payload;
      this.#payload = undefined;
      this.#payloadFilled = 0;
      this.#inPayload = false;
      frames.push(parseFrame(type, payload, true, this.#version));
    }
    return offset + n;
  }

  #fail(error: unknown): void {
    this.#failed = true;
    this.#error = error;
    // Nothing more will be decoded: drop what was held.
    this.#payload = undefined;
    this.#payloadFilled = 0;
    this.#headerFilled = 0;
    this.#inPayload = false;
  }
}
