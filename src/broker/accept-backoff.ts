// accept(2) failing for want of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) leaves the connection
// queued, so a level-triggered watcher would fire again at once and spin: instead the watcher pauses
// and retries after a growing delay, and one episode logs twice (when it starts, when it ends), not
// once per attempt. Errors about one connection (ECONNABORTED, EPROTO…) just skip it (accept(2)).
import type { Logger } from '../log.ts';

const RESOURCE_ERRORS = new Set(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']);
/** accept(2): the connection was aborted or hit a network error; the next one is fine. */
const CONNECTION_ERRORS = new Set(['ECONNABORTED', 'EPROTO', 'EINTR', 'EPERM']);
const FIRST_DELAY_MS = 10;
const MAX_DELAY_MS = 1000;

export interface AcceptControl {
  pause(): void;
  resume(): void;
}

export class AcceptBackoff {
  #control: AcceptControl;
  #log: Logger;
  #episode: { since: number; failures: number; delayMs: number; code: string } | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(control: AcceptControl, log: Logger) {
    this.#control = control;
    this.#log = log;
  }

  /** After a failed accept: true when accepting is paused (stop the loop), false to go on. */
  failed(error: unknown): boolean {
    const code = (error as { code?: string })?.code ?? 'unknown';
    if (CONNECTION_ERRORS.has(code)) return false;
    const now = Date.now();
    if (!this.#episode) {
      this.#episode = { since: now, failures: 0, delayMs: FIRST_DELAY_MS, code };
      const kind = RESOURCE_ERRORS.has(code) ? 'out of resources' : 'failing';
      this.#log('warning', `accept: ${(error as Error)?.message ?? code}: ${kind}; pausing accepts (retrying from ${FIRST_DELAY_MS} ms up to every ${MAX_DELAY_MS} ms)`);
    } else {
      this.#episode.delayMs = Math.min(this.#episode.delayMs * 2, MAX_DELAY_MS);
    }
    this.#episode.failures += 1;
    this.#control.pause();
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#control.resume();
    }, this.#episode.delayMs);
    return true;
  }

  /** After an accept that worked: ends an episode, if one was under way. */
  succeeded(): void {
    const episode = this.#episode;
    if (!episode) return;
    this.#episode = undefined;
    this.#log('notice', `accept works again after ${episode.failures} failed attempts (${episode.code}) over ${Date.now() - episode.since} ms`);
  }

  get paused(): boolean {
    return this.#timer !== undefined;
  }

  /** Stops any pending retry (shutdown). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
