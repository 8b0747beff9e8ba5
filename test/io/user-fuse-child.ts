// Run by peer-close.test.ts in a mount namespace of its own: a user's FUSE file (no allow_other, so
// root's statx of it fails) whose FLUSH is never answered, sent twice; the first is closed through
// closeReceived, the second through drainPeer. Prints their outcome once both returned, and whether the file
// system was still alive then (its end would have released a close held on the FLUSH).
// The mountpoint is the parent's to make and remove: inside this namespace it stays a mount (of a
// dead server) until the namespace goes, so only the parent, outside it, can remove the directory.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { closeReceived } from '../../src/io/fds.ts';

const [binary, mountpoint] = process.argv.slice(2) as [string, string];
const [a, b] = native().socketpair();
// A user's mount (no allow_other) whose FLUSH is never answered; a child of it sends its file `f` twice on fd 3.
const options = ['--as', '65534', '--hang', 'flush', '--send-file', '--end-after', '20'];
const server = spawn(binary, [...options, mountpoint], { stdio: ['ignore', 'ignore', 'pipe', a] });
let log = '';
await new Promise<void>((resolve, reject) => {
  server.stderr!.on('data', (chunk) => {
    log += chunk;
    if (log.includes('sent')) resolve();
  });
  server.on('exit', () => reject(new Error(`userfuse: ${log}`)));
});
const first = native().recvmsg(b, Buffer.alloc(1), 0, 1, 1)!;
closeReceived(first.fds);
const drained = native().drainPeer(b);
// Alive (not a zombie) once both returned: neither waited for its end (it ends itself after 20 s).
const alive = !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${server.pid}/stat`, 'utf8'));
process.stdout.write(`${JSON.stringify({ first: first.fds.length, drained: drained.detached, alive })}\n`);
// Its end aborts the connection: the detached closes' FLUSH ends, and this process can exit.
server.kill('SIGKILL');
