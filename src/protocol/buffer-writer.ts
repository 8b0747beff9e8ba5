// Big-endian writes into one buffer sized in advance, so a frame is built with a single allocation.
export class BufferWriter {
  #buf: Buffer;
  #offset = 0;

  constructor(size: number) {
    this.#buf = Buffer.allocUnsafe(size);
  }

  u8(value: number): this {
    this.#offset = this.#buf.writeUInt8(value, this.#offset);
    return this;
  }

  u16(value: number): this {
    this.#offset = this.#buf.writeUInt16BE(value, this.#offset);
    return this;
  }

  u32(value: number): this {
    this.#offset = this.#buf.writeUInt32BE(value, this.#offset);
    return this;
  }

  i32(value: number): this {
    this.#offset = this.#buf.writeInt32BE(value, this.#offset);
    return this;
  }

  u64(value: bigint): this {
    this.#offset = this.#buf.writeBigUInt64BE(value, this.#offset);
    return this;
  }

  bytes(data: Uint8Array): this {
    this.#buf.set(data, this.#offset);
    this.#offset += data.length;
    return this;
  }

  /** The finished buffer; it must be exactly full, or the size computed in advance was wrong. */
  finish(): Buffer {
    if (this.#offset !== this.#buf.length) {
      throw new Error(`frame size mismatch: wrote ${this.#offset} of ${this.#buf.length} bytes`);
    }
    return this.#buf;
  }
}
