// A descriptor on HELLO is refused (by the kernel where it has SO_PASSRIGHTS, else by us, and closed);
// closing it must not stop the broker. A TCP socket with
// SO_LINGER and unsent data would block close(2) for its linger time on the broker's event loop,
// where it accepts everything else: the addon disarms the linger of every socket it receives. The
// kernel itself releases the descriptors a read had no room for (MSG_CTRUNC) and those still queued
// when the socket is closed, in the reading or closing thread, where no disarming reaches them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bootSandbox, SOCKET_GROUP, type Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, SOCKET_PATH } from '../sandbox/deploy.ts';
import { deploySupervisor } from '../support/supervisor.ts';

// MODE: one (a lingering socket on HELLO), many (four on HELLO: more than a read has room for),
// queued (a junk header, more filler than a refusal reads away, then a lingering socket behind it).
const SCRIPT = `
import socket, struct, sys, time
MODE = sys.argv[1]
HELLO = bytes.fromhex('01000000084f43505400010001')
def roundtrip():
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect('${SOCKET_PATH}'); s.send(HELLO)
    try: return 'answered' if s.recv(64)[:1] == b'\\x02' else 'refused'
    except socket.timeout: return 'no answer in 10 s'
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen()
def lingering():
    c = socket.create_connection(l.getsockname()); a, _ = l.accept()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); c.setblocking(False)
    try:
        while True: c.send(b'x' * 65536)
    except BlockingIOError: pass
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 3600))
    armed.append(c)
    return c, a
armed = []
def rights(*sockets): return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('%di' % len(sockets), *[s.fileno() for s in sockets]))]
def send(u, data, *sockets):
    # EPERM: the socket takes no descriptors before START (SO_PASSRIGHTS, Linux 6.16); the bytes go alone.
    try:
        u.sendmsg([data], rights(*sockets))
        for s in sockets: armed.remove(s); s.close() # the broker's copy is now the last one
    except PermissionError:
        u.send(data); print('refused by the kernel', file=sys.stderr)
keep = []
u = socket.socket(socket.AF_UNIX); u.connect('${SOCKET_PATH}')
try:
  if MODE == 'one':
    c, a = lingering(); keep.append(a)
    send(u, HELLO, c)
  elif MODE == 'many':
    pairs = [lingering() for _ in range(4)]; keep += [a for _, a in pairs]
    send(u, HELLO, *[c for c, _ in pairs])
  elif MODE == 'queued':
    c, a = lingering(); keep.append(a)
    u.sendall(bytes.fromhex('7f00000000') + b'x' * 96 * 1024)
    send(u, b'x', c)
except OSError as e:
  print('the broker closed first: %s' % e, file=sys.stderr) # its refusal came before all was sent
# Those never sent are ours alone: their close would linger here.
for s in armed: s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 0, 0)); s.close()
time.sleep(0.5)
print(roundtrip(), flush=True)
`;

let sandbox: Sandbox;

test.before(async () => {
  sandbox = await bootSandbox({ name: 'broker-hostile-hello' });
  await deploySupervisor(sandbox);
  await sandbox.install([{ content: SCRIPT, to: '/opt/opencode-pty/test/linger.py', mode: 0o644 }]);
});

test.after(async () => {
  await sandbox?.stop();
});

async function asAgent(mode: string): Promise<string> {
  const run = await sandbox.exec([
    'systemd-run', '--quiet', '--wait', '--collect', '--pipe', `--unit=${AGENT_SERVICE}`, '--service-type=exec',
    `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--property=SupplementaryGroups=${SOCKET_GROUP.name}`,
    '/usr/bin/python3', '/opt/opencode-pty/test/linger.py', mode,
  ], { timeoutMs: 60_000 });
  assert.is(run.code, 0, run.stderr);
  return run.stdout.trim();
}

test('the agent sends HELLO with a lingering TCP socket attached: its next connection is still answered', async () => {
  assert.is(await asAgent('one'), 'answered');
});

test('four lingering sockets on HELLO, more than the read has room for: the next connection is still answered', async () => {
  assert.is(await asAgent('many'), 'answered');
});

test('a lingering socket queued behind more than a refusal reads away: the next connection is still answered', async () => {
  assert.is(await asAgent('queued'), 'answered');
});

test.run();
