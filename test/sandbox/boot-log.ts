// Collects what PID 1 writes to its console (a pty) and what the first stage prints into one log file.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';

export class BootLog {
  readonly path: string;
  #text = '';
  /** Carriage returns at the end of the last chunk, not yet known to end a line. */
  #heldCr = '';
  #file: number;

  constructor(path: string) {
    this.path = path;
    mkdirSync(dirname(path), { recursive: true });
    this.#file = openSync(path, 'w', 0o644);
  }

  get text(): string {
    return this.#text;
  }

  append(chunk: Buffer | string): void {
    // The console is a terminal: drop the carriage returns systemd and the line discipline (ONLCR) add.
    // A chunk may end between "\r" and its "\n": the trailing ones wait for the next chunk.
    const joined = this.#heldCr + chunk.toString();
    const held = /\r*$/.exec(joined)![0];
    this.#heldCr = held;
    const text = joined.slice(0, joined.length - held.length).replace(/\r+\n/g, '\n');
    this.#text += text;
    if (this.#file >= 0) writeSync(this.#file, text);
  }

  /** Copies a stream (the console's master side, the launcher's stderr) into the log. */
  follow(stream: Readable | null): void {
    stream?.on('data', (chunk: Buffer) => this.append(chunk));
  }

  /** Closes the file; call once the followed streams have closed. The text stays readable. */
  finish(): void {
    // What was held back ended no line: it is kept as it came.
    this.#text += this.#heldCr;
    if (this.#file >= 0 && this.#heldCr) writeSync(this.#file, this.#heldCr);
    this.#heldCr = '';
    if (this.#file >= 0) {
      closeSync(this.#file);
      this.#file = -1;
    }
  }
}
