// A TCP socket with unsent data and SO_LINGER of an hour, ours alone: closing the last reference to it
// blocks for that hour (socket(7)). Python builds it (Node cannot set SO_LINGER) and arms the linger
// again after our recvmsg disarmed it, so the descriptor returned is armed.
import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';

export async function lingeringSocket(): Promise<{ fd: number; stop(): void }> {
  const script = [
    'import socket, struct, sys, time',
    'l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()',
    'c = socket.create_connection(l.getsockname()); a, _ = l.accept()',
    'a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); c.setblocking(False)',
    'try:\n    while True: c.send(b"x" * 65536)\nexcept BlockingIOError: pass',
    'u = socket.socket(socket.AF_UNIX, fileno=3)',
    'u.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", c.fileno()))])',
    'print("sent", flush=True); sys.stdin.readline()',
    'c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 3600)); c.close()',
    'print("armed", flush=True); time.sleep(600)',
  ].join('\n');
  const [mine, forPython] = native().socketpair();
  const python = spawn('/usr/bin/python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit', forPython] });
  closeSync(forPython);
  let said = '';
  python.stdout!.on('data', (chunk) => (said += chunk));
  const heard = (word: string) =>
    new Promise<void>((resolve) => {
      const check = () => (said.includes(word) ? resolve() : python.stdout!.once('data', check));
      check();
    });
  await heard('sent');
  const fd = native().recvmsg(mine, Buffer.alloc(1), 0, 1, 1)!.fds[0]!;
  python.stdin!.write('rearm\n');
  await heard('armed');
  closeSync(mine);
  return { fd, stop: () => python.kill('SIGKILL') };
}
