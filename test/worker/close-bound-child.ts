// Run by hostile-descriptors.integration.ts with fd 3 a FUSE file whose FLUSH will never be answered:
// queues it many times on a socketpair that takes descriptors (as every Unix socket does on a kernel
// without SO_PASSRIGHTS), then closes that connection as the last close of a peer's does (closePeer).
// Prints "ready" at once; on "go" (a stdin line) drains and prints what it saw as one JSON line; on
// "released" (the file system is gone, so every FLUSH fails at once) waits until the deferred drain
// has finished and prints one more JSON line.
import { readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { native } from '../../src/native/binding.ts';
import { closePeer, deferredDrains } from '../../src/io/peer-close.ts';
import { closeBacklog } from '../../src/broker/accept-loop.ts';

const FUSE_FD = 3;
const MESSAGES = 8;
const PER_MESSAGE = 200;
const threads = () => readdirSync('/proc/self/task').length;
const isOpen = (fd: number) => {
  try {
    native().statCached(fd);
    return true;
  } catch {
    return false;
  }
};

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
process.stdout.write('ready\n');
await lines.next();
const before = threads();
const [ours, theirs] = native().socketpair(1 << 20);
const copies = Array.from({ length: PER_MESSAGE }, () => FUSE_FD);
for (let i = 0; i < MESSAGES; i++) native().sendmsg(ours, Buffer.from('x'), 0, 1, copies);
const closed = closePeer(theirs);
// The event loop still turns: a timer fires.
await new Promise((resolve) => setTimeout(resolve, 1));
const held = { closed, sent: MESSAGES * PER_MESSAGE, newThreads: threads() - before, deferred: deferredDrains(), open: isOpen(theirs), backlog: closeBacklog() ?? null, ...native().closeThreads() };
process.stdout.write(`${JSON.stringify(held)}\n`);
await lines.next();
// The retry is a timer: poll the counts on a timer too (the test bounds the wait).
while (deferredDrains() > 0 || native().pendingCloses() > 0) await new Promise((resolve) => setTimeout(resolve, 20));
process.stdout.write(`${JSON.stringify({ deferred: deferredDrains(), open: isOpen(theirs), backlog: closeBacklog() ?? null, ...native().closeThreads() })}\n`);
process.stdin.destroy();
