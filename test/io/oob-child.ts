// Run by peer-close.test.ts: a peer's MSG_OOB byte carries a lingering TCP socket, ours alone (the
// sender closed its copy, armed). Mode "read" reads the connection once as a stream read does; mode
// "drain" closes it through closePeer. Prints "returned" when that call returned, then "settled" once
// no close is pending on the close pool, or "held" if one still is after 10 s.
import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { closePeer } from '../../src/io/peer-close.ts';
import { closesSettled } from './closes-settled.ts';
import { readChunk } from '../../src/io/stream-read.ts';

const script = [
  'import socket, struct, sys, time',
  'l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()',
  'c = socket.create_connection(l.getsockname()); a, _ = l.accept()',
  'a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); c.setblocking(False)',
  'try:\n    while True: c.send(b"x" * 65536)\nexcept BlockingIOError: pass',
  'c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 3600))',
  'u = socket.socket(socket.AF_UNIX, fileno=3)',
  'u.sendmsg([b"z"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", c.fileno()))], socket.MSG_OOB)',
  'c.close()',  // not the last reference: the one on the OOB byte is
  'print("sent", flush=True); time.sleep(600)',
].join('\n');
const [mine, forPython] = native().socketpair();
const python = spawn('/usr/bin/python3', ['-c', script], { stdio: ['ignore', 'pipe', 'inherit', forPython] });
closeSync(forPython);
let said = '';
python.stdout!.on('data', (chunk) => (said += chunk));
await new Promise<void>((resolve) => {
  const check = () => (said.includes('sent') ? resolve() : python.stdout!.once('data', check));
  check();
});
if (process.argv[2] === 'read') {
  readChunk(mine, Buffer.alloc(64));
  process.stdout.write('returned\n');
  closePeer(mine);
} else {
  closePeer(mine);
  process.stdout.write('returned\n');
}
process.stdout.write(`${await closesSettled()}\n`);
python.kill('SIGKILL');
