// Run by peer-close.test.ts: queues a lingering TCP socket on a socketpair, then closes the receiving
// end as the last holder through closePeer; prints "closed" when that returned.
import { native } from '../../src/native/binding.ts';
import { closePeer } from '../../src/io/peer-close.ts';
import { lingeringSocket } from './lingering.ts';
import { closeSync } from 'node:fs';

const lingering = await lingeringSocket();
const [a, b] = native().socketpair();
native().sendmsg(a, Buffer.from('x'), 0, 1, [lingering.fd]);
closeSync(lingering.fd); // ours was the last one outside the queue
closePeer(b);
closeSync(a);
lingering.stop();
process.stdout.write('closed\n');
