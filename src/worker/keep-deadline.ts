// Root's keep deadline of a kept session (docs/security.md "Kept sessions"): one timer that may run
// longer than setTimeout's bound. Node clamps a delay above 2^31-1 ms (24.8 days) to 1 ms with only a
// TimeoutOverflowWarning (nodejs.org/api/timers.html "setTimeout"), so a longer keep would end the
// session the moment it detached; the wait is chained in steps within the bound instead.

/** setTimeout's largest delay: a signed 32-bit count of ms. */
export const MAX_TIMER_MS = 0x7fff_ffff;

export class KeepDeadline {
  #timer: NodeJS.Timeout | undefined;
  #at: number | undefined;
  #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** When it passes (Unix ms), while armed. */
  get at(): number | undefined {
    return this.#at;
  }

  /** (Re)arms: `fire` runs once `ms` from now, unless disarmed first. */
  arm(ms: number, fire: () => void): void {
    this.disarm();
    const at = this.#now() + ms;
    this.#at = at;
    const wait = () => {
      const left = at - this.#now();
      if (left <= 0) {
        this.#timer = undefined;
        this.#at = undefined;
        return fire();
      }
      this.#timer = setTimeout(wait, Math.min(left, MAX_TIMER_MS));
    };
    this.#timer = setTimeout(wait, Math.min(ms, MAX_TIMER_MS));
  }

  disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = undefined;
  }
}
