// The calling terminal: its window size, and raw mode that is restored on every way out.
import type { ReadStream } from 'node:tty';

export interface TerminalSize {
  rows: number;
  cols: number;
}

/** What a terminal session gets when no terminal is there to measure (a pipe, a file). */
export const DEFAULT_SIZE: TerminalSize = { rows: 24, cols: 80 };

/** The size of the first of `streams` that is a terminal, asked fresh (TIOCGWINSZ via getWindowSize, not
 * the cached rows/columns that Node refreshes on its own SIGWINCH listener, which may run after ours). */
export function terminalSize(streams: readonly NodeJS.WriteStream[]): TerminalSize {
  for (const stream of streams) {
    if (!stream.isTTY) continue;
    try {
      const [cols, rows] = stream.getWindowSize();
      if (rows > 0 && cols > 0) return { rows: Math.min(rows, 0xffff), cols: Math.min(cols, 0xffff) };
    } catch {
      // Not measurable after all (a closed terminal): try the next one.
    }
  }
  return DEFAULT_SIZE;
}

/** Puts a terminal stdin in raw mode, so every key (^C, ^D, ^Z included) goes to the session as bytes.
 * Returns an idempotent restore, also run at process exit, which covers uncaught errors. */
export function enterRawMode(stdin: ReadStream): () => void {
  stdin.setRawMode(true);
  let restored = false;
  const restore = (): void => {
    if (restored) return;
    restored = true;
    process.off('exit', restore);
    try {
      stdin.setRawMode(false);
    } catch {
      // The terminal is gone: nothing left to restore.
    }
  };
  process.on('exit', restore);
  return restore;
}
