// The client's two credit windows as pure bookkeeping: what the server may still send, what we may still send.
import { Limits } from '../protocol/index.ts';

/** Owed credit is granted in batches of at least this much, so one CREDIT frame covers many reads. */
export const GRANT_BATCH = Limits.INITIAL_WINDOW / 4;

/**
 * OUTPUT credit. The server's window plus what our consumer has not read yet always equals
 * INITIAL_WINDOW (less a batch owed): credit goes back only as the consumer reads, so a consumer that
 * stops reading closes the server's window instead of growing our buffer.
 */
export class OutputWindow {
  #serverWindow: number = Limits.INITIAL_WINDOW;
  #received = 0;
  #granted = 0;

  /** What the server may still send before it must wait for CREDIT. */
  get serverWindow(): number {
    return this.#serverWindow;
  }

  /** Counts an OUTPUT payload; false when it overran the window (a protocol violation). */
  receive(bytes: number): boolean {
    if (bytes > this.#serverWindow) return false;
    this.#serverWindow -= bytes;
    this.#received += bytes;
    return true;
  }

  /** Given how many received bytes the consumer has not read yet, the CREDIT to send now (0 for none). */
  grant(unread: number): number {
    const owed = this.#received - unread - this.#granted;
    if (owed < GRANT_BATCH) return 0;
    this.#granted += owed;
    this.#serverWindow += owed;
    return owed;
  }
}

/** INPUT credit is the protocol's send window. */
export { SendWindow as InputWindow } from '../protocol/index.ts';
