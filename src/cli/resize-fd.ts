// `run --resize-fd FD`: reads "ROWS COLS" lines from an inherited descriptor and reports each size
// (the I/O edge of resize-lines.ts). fs streams, not net.Socket: they read a pipe, a FIFO or a file
// alike, on Node and on Bun, without a libuv handle of their own.
import { createReadStream, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { ResizeLines } from './resize-lines.ts';
import type { TerminalSize } from './terminal.ts';

/** The access mode as /proc/self/fdinfo's octal "flags:" shows it (proc(5)). */
const O_ACCMODE = 0o3;
const O_WRONLY = 0o1;

/**
 * Why `fd` cannot be the resize fd, or undefined when it can: open, readable, and not one of the
 * runtime's own. The runtime (Node, Bun) opens descriptors of its own at start-up: epoll and eventfd
 * instances, and pipes whose both ends it holds. A wrong number must not make this command read
 * those (reading an eventfd would steal the event loop's wake-ups), so they are refused; what a
 * caller hands down is a pipe, socket or file whose other end is not here.
 */
export function unusableFd(fd: number): string | undefined {
  const target = descriptor(String(fd));
  if (target === undefined) return 'not an open file descriptor';
  if (target.startsWith('anon_inode:')) return `${target} is one of the runtime's own`;
  if (writeOnly(String(fd))) return 'open for writing only';
  // A pipe's write end held here too (a dup of the read end, as `3<&0` makes, is fine).
  if (target.startsWith('pipe:') && readdirSync('/proc/self/fd').some((other) => descriptor(other) === target && writeOnly(other))) {
    return `this process holds the write end of ${target} too: one of the runtime's own`;
  }
  return undefined;
}

/** What descriptor `name` of this process refers to ("pipe:[123]", "/dev/null" …), undefined when closed. */
function descriptor(name: string): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${name}`);
  } catch {
    return undefined;
  }
}

function writeOnly(name: string): boolean {
  try {
    const flags = parseInt(/^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${name}`, 'latin1'))?.[1] ?? '', 8);
    return (flags & O_ACCMODE) === O_WRONLY;
  } catch {
    return false; // closed meanwhile (the directory listing's own fd)
  }
}

/** Starts reading `fd`; returns the function that stops it. Its end or a read error only stops the reading. */
export function readResizeFd(fd: number, onSize: (size: TerminalSize) => void, onError: (message: string) => void): () => void {
  const lines = new ResizeLines();
  const stream = createReadStream('', { fd, autoClose: true });
  stream.on('data', (chunk) => {
    for (const line of lines.push(chunk as Buffer)) {
      if ('size' in line) onSize(line.size);
      else onError(`--resize-fd ${fd}: ${line.error}: skipped`);
    }
  });
  stream.on('error', (error) => onError(`--resize-fd ${fd}: ${error.message}`));
  return () => stream.destroy();
}
