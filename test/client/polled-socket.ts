// A test server's end of one connection, read and written with the addon's recvmsg/sendmsg and polled by
// timer: the client suites run on Bun too, which has no uv_poll, and this fixture is not under test.
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { ExactRequest, type ExactRead } from '../../src/io/exact-read.ts';

/** Milliseconds between tries while the kernel has nothing for us (or no room). */
const POLL_MS = 1;

export class PolledSocket {
  #fd: number;
  #pending: { data: Buffer; fds: number[] }[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(fd: number) {
    this.#fd = fd;
  }

  get fd(): number {
    return this.#fd;
  }

  /** Exactly n bytes and the fds that rode on them (at most maxFds, plus one seen as stray). */
  readExact(n: number, maxFds: number): Promise<ExactRead> {
    return new Promise((resolve, reject) => {
      const request = new ExactRequest(n, maxFds, resolve, reject);
      const step = () => {
        if (this.#fd < 0) return reject(new Error('closed'));
        if (request.step(this.#fd) === 'pending') setTimeout(step, POLL_MS);
      };
      step();
    });
  }

  /** Sends in order; fds ride on the first byte of `data`. */
  write(data: Buffer, fds: number[] = []): void {
    this.#pending.push({ data, fds });
    this.#flush();
  }

  close(): void {
    if (this.#fd < 0) return;
    clearTimeout(this.#timer);
    closeSync(this.#fd);
    this.#fd = -1;
  }

  #flush(): void {
    this.#timer = undefined;
    while (this.#fd >= 0 && this.#pending.length > 0) {
      const head = this.#pending[0]!;
      let sent: number;
      try {
        sent = native().sendmsg(this.#fd, head.data, 0, head.data.length, head.fds);
      } catch {
        // The client is gone: what it did not take no longer matters.
        this.#pending = [];
        return;
      }
      if (sent < 0) {
        this.#timer ??= setTimeout(() => this.#flush(), POLL_MS);
        return;
      }
      head.fds = [];
      head.data = head.data.subarray(sent);
      if (head.data.length === 0) this.#pending.shift();
    }
  }
}
