// The refusal log's I/O edge: journal lines as refusal-log.ts decides them, and the timer that
// closes quiet episodes, running only while an episode is open.
import type { Logger } from '../log.ts';
import { QUIET_MS, RefusalLog } from './refusal-log.ts';

export class RefusalReporter {
  #log: Logger;
  #refusals: RefusalLog;
  #timer: NodeJS.Timeout | undefined;

  constructor(log: Logger, refusals = new RefusalLog()) {
    this.#log = log;
    this.#refusals = refusals;
  }

  /** One refusal of the peer keyed `key` (its cgroup): a line if it opens an episode, else a count. */
  note(key: string, reason: string, detail: string): void {
    const line = this.#refusals.record(key, reason, detail, Date.now());
    if (line) this.#log('notice', line);
    this.#timer ??= setInterval(() => this.#expire(Date.now()), QUIET_MS / 2).unref();
  }

  /** Closes every open episode now, with its count (at shutdown). */
  flush(): void {
    this.#expire(Number.POSITIVE_INFINITY);
  }

  #expire(now: number): void {
    for (const line of this.#refusals.expire(now)) this.#log('notice', line);
    if (this.#refusals.open === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
