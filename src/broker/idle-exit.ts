// The broker's idle exit: once nothing is left (no session, handshake, orphan or adoption), it ends
// after limits.idleExitMs and systemd keeps the socket for the next connection. A timer armed while
// idle must not fire once something is under way again, so every look while busy disarms it.

/** The timer functions it uses (tests: a clock of their own). */
export interface Timers {
  set(fire: () => void, ms: number): unknown;
  clear(timer: unknown): void;
}

const REAL: Timers = { set: (fire, ms) => setTimeout(fire, ms), clear: (timer) => clearTimeout(timer as NodeJS.Timeout) };

export class IdleExit {
  #timer: unknown;
  #idleMs: number;
  #exit: () => void;
  #timers: Timers;

  /** `idleMs` 0: never. */
  constructor(idleMs: number, exit: () => void, timers: Timers = REAL) {
    this.#idleMs = idleMs;
    this.#exit = exit;
    this.#timers = timers;
  }

  /** Armed (anew) when idle, disarmed when not. */
  look(idle: boolean): void {
    this.cancel();
    if (!idle || this.#idleMs === 0) return;
    this.#timer = this.#timers.set(this.#exit, this.#idleMs);
  }

  /** Something is under way (a connection accepted) or the broker stops. */
  cancel(): void {
    if (this.#timer !== undefined) this.#timers.clear(this.#timer);
    this.#timer = undefined;
  }
}
