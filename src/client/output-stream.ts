// The session's output stream: credit is granted back as its reader takes bytes out.
import { Readable } from 'node:stream';

/** The output stream's buffer mark: credit is granted as it is read below this. */
const OUTPUT_HIGH_WATER = 64 * 1024;

/**
 * The output stream. Readable calls _read() before it takes the bytes out of its buffer, and not again
 * until the next push(), so _read alone would see every read too early; credit is checked after each
 * read() instead (flowing mode, pipe() and async iteration all go through read()).
 */
export class OutputStream extends Readable {
  readonly #consumed: () => void;

  constructor(consumed: () => void) {
    super({ highWaterMark: OUTPUT_HIGH_WATER });
    this.#consumed = consumed;
  }

  override _read(): void {
    this.#consumed();
  }

  override read(size?: number): any {
    const chunk: unknown = super.read(size);
    this.#consumed();
    return chunk;
  }
}
