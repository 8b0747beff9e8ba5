// A kept session's output offsets as pure bookkeeping: every OUTPUT byte has an absolute offset (docs/protocol.md
// "Offsets"); the connection's bytes are consecutive except where TRUNCATED jumps ahead.

/** Where offsets continue after a jump: from the `at`-th byte handed to the reader on, at `offset`. */
interface Jump {
  at: number;
  offset: number;
}

/**
 * Offsets are numbers: exact below 2^53 (9 PiB of output, centuries at any terminal's speed); a server that
 * reports more is refused as a protocol error rather than rounded.
 */
export class OutputOffsets {
  /** The offset the next OUTPUT byte arrives with. */
  #next: number;
  /** Bytes handed to the reader so far. */
  #delivered = 0;
  #jumps: Jump[];

  constructor(start: number) {
    this.#next = start;
    this.#jumps = [{ at: 0, offset: start }];
  }

  /** The offset of the next byte to arrive. */
  get next(): number {
    return this.#next;
  }

  /** Counts an OUTPUT payload; an error text when the offsets would pass 2^53. */
  receive(bytes: number): string | undefined {
    if (this.#next + bytes > Number.MAX_SAFE_INTEGER) return `output offsets pass 2^53 (${this.#next} + ${bytes})`;
    this.#next += bytes;
    this.#delivered += bytes;
    return undefined;
  }

  /** TRUNCATED(oldest, dropped): the bytes from the next offset up to `oldest` are gone, and exactly `dropped`
   * of them. An error text when the frame contradicts the bytes received so far. */
  truncate(oldest: number, dropped: number): string | undefined {
    if (oldest - dropped !== this.#next) {
      return `TRUNCATED(oldest ${oldest}, dropped ${dropped}) does not follow offset ${this.#next}`;
    }
    this.#next = oldest;
    this.#jumps.push({ at: this.#delivered, offset: oldest });
    return undefined;
  }

  /** The offset just after the last byte the reader took, given how many delivered bytes it has not read. */
  readOffset(unread: number): number {
    const consumed = this.#delivered - unread;
    // Jumps the reader has passed are no longer needed: keep the last one at or before it.
    while (this.#jumps.length > 1 && this.#jumps[1]!.at <= consumed) this.#jumps.shift();
    const jump = this.#jumps[0]!;
    return jump.offset + (consumed - jump.at);
  }
}
