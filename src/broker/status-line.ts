// The broker's STATUS= line for systemd (sd_notify(3)): sent once per turn of the event loop at most,
// however many connections changed in it, and only when it changed: under a flood of refusals, which
// change none of it, one datagram to PID 1 per turn otherwise.

export class StatusLine {
  #pending = false;
  #last = '';
  #compose: () => string;
  #notify: (state: string) => void;

  constructor(compose: () => string, notify: (state: string) => void) {
    this.#compose = compose;
    this.#notify = notify;
  }

  /** Something it shows may have changed: the line is composed at the end of this turn. */
  changed(): void {
    if (this.#pending) return;
    this.#pending = true;
    setImmediate(() => {
      this.#pending = false;
      const status = `STATUS=${this.#compose()}`;
      if (status === this.#last) return;
      this.#last = status;
      this.#notify(status);
    });
  }
}
