// Bounds-checked big-endian reads over one frame payload: a read past the end is BAD_LENGTH, not a RangeError.
import { ProtocolError } from './errors.ts';

// fatal: malformed UTF-8 is an error, never U+FFFD; ignoreBOM: a leading U+FEFF is data, kept as sent.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class BufferReader {
  #buf: Buffer;
  #offset = 0;
  #wireCode: number | undefined;

  /** `wireCode` is what errors raised while reading carry (BAD_START for a START body). */
  constructor(buf: Buffer, wireCode?: number) {
    this.#buf = buf;
    this.#wireCode = wireCode;
  }

  get remaining(): number {
    return this.#buf.length - this.#offset;
  }

  #take(size: number, what: string): number {
    if (size > this.remaining) {
      throw new ProtocolError(
        'BAD_LENGTH',
        `${what} needs ${size} bytes at offset ${this.#offset}, ${this.remaining} left`,
        this.#wireCode,
      );
    }
    const at = this.#offset;
    this.#offset += size;
    return at;
  }

  u8(what: string): number {
    return this.#buf.readUInt8(this.#take(1, what));
  }

  u16(what: string): number {
    return this.#buf.readUInt16BE(this.#take(2, what));
  }

  u32(what: string): number {
    return this.#buf.readUInt32BE(this.#take(4, what));
  }

  i32(what: string): number {
    return this.#buf.readInt32BE(this.#take(4, what));
  }

  u64(what: string): bigint {
    return this.#buf.readBigUInt64BE(this.#take(8, what));
  }

  /** A view of the next `size` bytes (aliases the payload; copy before keeping it). */
  bytes(size: number, what: string): Buffer {
    const at = this.#take(size, what);
    return this.#buf.subarray(at, at + size);
  }

  utf8(size: number, what: string): string {
    const bytes = this.bytes(size, what);
    try {
      return utf8.decode(bytes);
    } catch {
      throw new ProtocolError('BAD_UTF8', `${what} is not valid UTF-8`, this.#wireCode);
    }
  }

  /** Byte values as characters (latin1), for fields that must be ASCII and are checked as such. */
  latin1(size: number, what: string): string {
    return this.bytes(size, what).toString('latin1');
  }

  /** Every frame is read exactly: trailing bytes mean the peer and we disagree on the layout. */
  end(what: string): void {
    if (this.remaining !== 0) {
      throw new ProtocolError('BAD_LENGTH', `${this.remaining} trailing bytes after ${what}`, this.#wireCode);
    }
  }
}
