// tmux's detach key on raw terminal input, as a pure filter: C-b d detaches, C-b C-b is one C-b, C-b and any
// other byte pass through as typed. The prefix may end one read and its key begin the next.
import { DETACH_KEY, DETACH_PREFIX } from './keep-args.ts';

export class DetachKeyFilter {
  #prefixPending = false;

  /** The bytes to send on, and whether the detach key came (bytes after it are not sent). */
  feed(chunk: Uint8Array): { forward: Buffer; detach: boolean } {
    const out: number[] = [];
    for (const byte of chunk) {
      if (this.#prefixPending) {
        this.#prefixPending = false;
        if (byte === DETACH_KEY) return { forward: Buffer.from(out), detach: true };
        out.push(DETACH_PREFIX);
        if (byte !== DETACH_PREFIX) out.push(byte);
      } else if (byte === DETACH_PREFIX) {
        this.#prefixPending = true;
      } else {
        out.push(byte);
      }
    }
    return { forward: Buffer.from(out), detach: false };
  }
}
