// One wait's time limit for the client: a server that accepts and never answers must not hold a caller forever.
import { ClientError } from './client-error.ts';

/** How long connect() waits for WELCOME, and start() for STARTED, unless told otherwise: a server that
 * accepts and never answers must not hold a caller forever. Starting a unit takes milliseconds; this
 * covers a loaded machine and a cold socket activation many times over. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** One wait's time limit, which may span steps (connect, then the handshake): time spent in an earlier
 * step counts against the later ones. */
export class Deadline {
  readonly #ms: number;
  readonly #what: string;
  readonly #startedAt = Date.now();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number | undefined, what: string) {
    this.#ms = ms ?? DEFAULT_TIMEOUT_MS;
    this.#what = what;
  }

  #error(): ClientError {
    return new ClientError('TIMEOUT', `${this.#what} within ${this.#ms} ms`);
  }

  /** Calls onExpired once the limit is reached, counting from construction. */
  arm(onExpired: (error: ClientError) => void): void {
    if (this.#ms <= 0) return;
    const left = Math.max(0, this.#startedAt + this.#ms - Date.now());
    this.#timer = setTimeout(() => onExpired(this.#error()), left);
  }

  /** `promise`, or TIMEOUT first; a result that comes late goes to `late` (to release it). */
  race<T>(promise: Promise<T>, late: (promise: Promise<T>) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let expired = false;
      this.arm((error) => {
        expired = true;
        late(promise);
        reject(error);
      });
      promise.then(
        (value) => (expired ? undefined : resolve(value)),
        (error: unknown) => (expired ? undefined : reject(error)),
      );
    });
  }

  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
