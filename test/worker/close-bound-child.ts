// Run by hostile-descriptors.integration.ts with fd 3 a FUSE file whose FLUSH will never be answered:
// queues it many times on a socketpair that takes descriptors (as every Unix socket does on a kernel
// without SO_PASSRIGHTS), then drains that queue as the last close of a peer's connection does.
// Prints "ready" at once; on "go" (stdin) drains, then prints what it saw as one JSON line.
import { readdirSync } from 'node:fs';
import { once } from 'node:events';
import { native } from '../../src/native/binding.ts';
import { closePeer } from '../../src/io/peer-close.ts';

const FUSE_FD = 3;
const MESSAGES = 4;
const PER_MESSAGE = 200;
const threads = () => readdirSync('/proc/self/task').length;

process.stdout.write('ready\n');
await once(process.stdin, 'data');
process.stdin.destroy();
const before = threads();
const [ours, theirs] = native().socketpair();
const copies = Array.from({ length: PER_MESSAGE }, () => FUSE_FD);
for (let i = 0; i < MESSAGES; i++) native().sendmsg(ours, Buffer.from('x'), 0, 1, copies);
const closed = closePeer(theirs);
// The event loop still turns: a timer fires.
await new Promise((resolve) => setTimeout(resolve, 1));
process.stdout.write(`${JSON.stringify({ closed, sent: MESSAGES * PER_MESSAGE, newThreads: threads() - before, ...native().closeThreads() })}\n`);
