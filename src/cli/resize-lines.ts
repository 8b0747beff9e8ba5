// Window sizes from a caller without a terminal (`run --resize-fd`): lines "ROWS COLS", as `stty size`
// prints them, decoded from a byte stream (pure; resize-fd.ts reads the fd).
import type { TerminalSize } from './terminal.ts';

/** A size line is at most "65535 65535\r": anything longer is not one, and is not buffered further. */
export const RESIZE_LINE_MAX = 32;
const SIZE_LINE = /^[ \t]*(\d{1,5})[ \t]+(\d{1,5})[ \t]*\r?$/;

export type ResizeLine = { size: TerminalSize } | { error: string };

/** Splits pushed bytes into lines and parses each; memory stays within RESIZE_LINE_MAX bytes. */
export class ResizeLines {
  #line = '';
  /** Inside a line that is already too long: dropped up to its newline. */
  #overlong = false;

  push(chunk: Buffer): ResizeLine[] {
    const results: ResizeLine[] = [];
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline >= 0; newline = chunk.indexOf(0x0a, start)) {
      this.#take(chunk.subarray(start, newline));
      results.push(this.#overlong ? { error: `a line longer than ${RESIZE_LINE_MAX} bytes` } : parseSizeLine(this.#line));
      this.#line = '';
      this.#overlong = false;
      start = newline + 1;
    }
    this.#take(chunk.subarray(start));
    return results;
  }

  #take(bytes: Buffer): void {
    if (this.#overlong) return;
    if (this.#line.length + bytes.length > RESIZE_LINE_MAX) {
      this.#overlong = true;
      this.#line = '';
    } else this.#line += bytes.toString('latin1');
  }
}

/** "ROWS COLS", each 1..65535 (the protocol's u16 sizes, not 0). */
export function parseSizeLine(line: string): ResizeLine {
  const match = SIZE_LINE.exec(line);
  const rows = Number(match?.[1]);
  const cols = Number(match?.[2]);
  if (!match || !(rows >= 1 && rows <= 0xffff && cols >= 1 && cols <= 0xffff)) {
    return { error: `${JSON.stringify(line)} is not "ROWS COLS" with each from 1 to 65535` };
  }
  return { size: { rows, cols } };
}
