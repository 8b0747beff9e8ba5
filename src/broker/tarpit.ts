// Connections refused at accept are answered after a short delay, as sshd and PAM delay a failed
// login: a process that reconnects the moment it is refused (a retry loop, a flood keeping N
// connections in flight) then makes at most N per delay, instead of as many as the broker can refuse,
// and its CPU and ours stay with the work that was admitted. Measured under a 16-connection flood:
// refusing at once let it make 1,800 connections a second. Held connections are bounded: past the
// bound, or once shutting down, a refusal goes out at once. A held connection has its decision made;
// it costs one descriptor and a queue entry until its ERROR is sent.

/** How long a refused connection waits for its ERROR. */
export const TARPIT_MS = 100;
/** Refused connections held at once; more are answered at once. */
export const MAX_HELD = 256;

interface Held<T> {
  refusal: T;
  due: number;
}

export interface TarpitOptions {
  delayMs?: number;
  maxHeld?: number;
  now?: () => number;
}

export class Tarpit<T> {
  #send: (refusal: T) => void;
  #delayMs: number;
  #maxHeld: number;
  #now: () => number;
  /** In order of arrival, so in order of due time (one delay for all). */
  #queue: Held<T>[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /** `send` answers one refusal (its ERROR, then the close). */
  constructor(send: (refusal: T) => void, options: TarpitOptions = {}) {
    this.#send = send;
    this.#delayMs = options.delayMs ?? TARPIT_MS;
    this.#maxHeld = options.maxHeld ?? MAX_HELD;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#queue.length - this.#head;
  }

  /** Answers `refusal` after the delay, or at once when the bound is reached or the tarpit is closed. */
  hold(refusal: T): void {
    if (this.#closed || this.size >= this.#maxHeld) return this.#send(refusal);
    this.#queue.push({ refusal, due: this.#now() + this.#delayMs });
    this.#arm();
  }

  /** Answers every held refusal now; later ones are answered at once. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#release(Number.POSITIVE_INFINITY);
  }

  #arm(): void {
    if (this.#timer || this.size === 0) return;
    const wait = Math.max(this.#queue[this.#head]!.due - this.#now(), 0);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#release(this.#now());
      this.#arm();
    }, wait);
  }

  #release(now: number): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.due <= now) {
      const { refusal } = this.#queue[this.#head]!;
      this.#head += 1;
      this.#send(refusal);
    }
    // Compact once the answered part is the larger one, so the array never grows without bound.
    if (this.#head > 0 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
