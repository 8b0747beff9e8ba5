// Run by peer-close.test.ts: queues a lingering TCP socket on a socketpair, then closes the receiving
// end as the last holder through closePeer; prints "closed" when that returned. With "nested", the
// lingering socket is queued on a Unix socket that is itself what the peer queued: closing that one
// frees its queue, and so the lingering socket, in the closing thread.
import { native } from '../../src/native/binding.ts';
import { closePeer } from '../../src/io/peer-close.ts';
import { lingeringSocket } from './lingering.ts';
import { closeSync } from 'node:fs';

const lingering = await lingeringSocket();
const [a, b] = native().socketpair();
if (process.argv[2] === 'nested') {
  const [x, y] = native().socketpair();
  native().sendmsg(x, Buffer.from('x'), 0, 1, [lingering.fd]);
  closeSync(x);
  native().sendmsg(a, Buffer.from('y'), 0, 1, [y]);
  closeSync(y); // the queue on `b` now holds the last reference to y, and y's queue the lingering socket
} else {
  native().sendmsg(a, Buffer.from('x'), 0, 1, [lingering.fd]);
}
closeSync(lingering.fd); // ours was the last one outside the queue
closePeer(b);
closeSync(a);
lingering.stop();
process.stdout.write('closed\n');
