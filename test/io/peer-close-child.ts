// Run by peer-close.test.ts: queues a lingering TCP socket on a socketpair, then closes the receiving
// end as the last holder through closePeer; prints "closed" when that returned. With "nested", the
// lingering socket is queued on a Unix socket that is itself what the peer queued: closing that one
// frees its queue, and so the lingering socket, in the closing thread. With "listener", it is queued
// on a connection still pending on a listening Unix socket, which is what the peer queued: the
// listener's close frees that connection and its queue. With "alias", the nested Unix socket
// comes after an O_PATH file on its own inode. Then prints "settled" once no close is
// pending on the close pool either, or "held" if one still is after 10 s (a close thread lingering).
import { closeSync, openSync, rmSync } from 'node:fs';
import { closeAll } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { closePeer } from '../../src/io/peer-close.ts';
import { closesSettled } from './closes-settled.ts';
import { lingeringSocket } from './lingering.ts';

const lingering = await lingeringSocket();
const [a, b] = native().socketpair();
const mode = process.argv[2];
// open(2) O_PATH (Linux): node:fs does not export it.
const O_PATH = 0o10000000;
if (mode === 'nested') {
  const [x, y] = native().socketpair();
  native().sendmsg(x, Buffer.from('x'), 0, 1, [lingering.fd]);
  closeSync(x);
  native().sendmsg(a, Buffer.from('y'), 0, 1, [y]);
  closeSync(y); // the queue on `b` now holds the last reference to y, and y's queue the lingering socket
} else if (mode === 'alias') {
  const [x, y] = native().socketpair();
  native().sendmsg(x, Buffer.from('x'), 0, 1, [lingering.fd]);
  closeSync(x);
  // An O_PATH file on y's sockfs inode: the same device and inode as y, but no socket and no hold on it.
  const alias = openSync(`/proc/self/fd/${y}`, O_PATH);
  native().sendmsg(a, Buffer.from('y'), 0, 1, [alias, y]);
  closeAll([alias, y]); // the queue on `b` holds the last reference to y, and y's queue the lingering socket
} else if (mode === 'listener') {
  const name = `/tmp/peer-close-${process.pid}.sock`;
  const listener = native().listenUnix(name, 4);
  const pending = native().connectUnix(name);
  native().sendmsg(pending, Buffer.from('x'), 0, 1, [lingering.fd]);
  closeSync(pending);
  native().sendmsg(a, Buffer.from('y'), 0, 1, [listener]);
  closeSync(listener); // the queue on `b` holds the listener, whose pending connection holds the lingering socket
  rmSync(name, { force: true });
} else {
  native().sendmsg(a, Buffer.from('x'), 0, 1, [lingering.fd]);
}
closeSync(lingering.fd); // ours was the last one outside the queue
closePeer(b);
closeSync(a);
process.stdout.write('closed\n');
process.stdout.write(`${await closesSettled()}\n`);
lingering.stop();
