// Credit windows of the data phase: how many INPUT/OUTPUT payload bytes a side may still send.
import { ErrorCode, Limits } from './constants.ts';

export class FlowError extends Error {
  readonly code = 'FLOW';
  readonly wireCode = ErrorCode.FLOW;
}

/** What a peer may still send us; overrunning it is a protocol error (FLOW). */
export class ReceiveWindow {
  #remaining: number;
  /** Bytes consumed locally but not yet granted back. */
  #ungranted = 0;

  constructor(initial: number = Limits.INITIAL_WINDOW) {
    this.#remaining = initial;
  }

  /** Counts bytes that arrived; throws FlowError when the peer sent more than granted. */
  receive(bytes: number): void {
    if (bytes > this.#remaining) throw new FlowError(`peer sent ${bytes} bytes with ${this.#remaining} of credit`);
    this.#remaining -= bytes;
  }

  /** Marks bytes as consumed; returns a grant to send once at least `threshold` bytes are owed, else 0. */
  consume(bytes: number, threshold: number): number {
    this.#ungranted += bytes;
    if (this.#ungranted < threshold) return 0;
    const grant = this.#ungranted;
    this.#ungranted = 0;
    this.#remaining += grant;
    return grant;
  }

  get remaining(): number {
    return this.#remaining;
  }
}

/** What we may still send the peer: INITIAL_WINDOW after STARTED plus every CREDIT it grants. */
export class SendWindow {
  #available: number;

  constructor(initial: number = Limits.INITIAL_WINDOW) {
    this.#available = initial;
  }

  /** Adds a peer's CREDIT; false (nothing added) when the total would exceed MAX_WINDOW, a protocol error. */
  grant(bytes: number): boolean {
    if (this.#available + bytes > Limits.MAX_WINDOW) return false;
    this.#available += bytes;
    return true;
  }

  /** Takes up to `wanted` bytes of credit; returns how many may be sent now. */
  take(wanted: number): number {
    const granted = Math.min(wanted, this.#available);
    this.#available -= granted;
    return granted;
  }

  get available(): number {
    return this.#available;
  }
}
