// Who may become a kept session's control channel through its rendezvous. The principals
// (src/broker/principals.ts) let root list, attach and stop kept sessions only with CAP_SYS_PTRACE: "a root
// service with its capabilities dropped must not read or type into the agent's terminals". The rendezvous
// is no way around that: a uid-0 process with no capability reaches /run/opencode-pty-kept (0700
// root:root: uid 0 owns it, so no capability is asked to search it), but a connection it queued while the
// worker lived is let go when the worker goes, and one it makes after that is refused (not a process of
// the supervisor's cgroup); nor can it read the broker's or a worker's memory (both non-dumpable).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, brokerPid, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { HELPER_DIALECT } from '../../src/control/helper-channel-core.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('kept-rendezvous', { limits: { maxSessions: 4, maxKept: 2 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

const OUT = '/run/kept-intruder';
const read = async (name: string) => {
  const result = await sandbox.exec(['cat', `${OUT}.${name}`]);
  return result.code === 0 ? result.stdout.trim() : undefined;
};

// What held: the client's account reaches neither the socket nor the record, nor can it put a name there.
test("the client's account cannot connect to a rendezvous, read a record or make a name in root's directory", async () => {
  const started = await agent.keep({ op: 'start', name: 'c', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(started.error, undefined, started.message);
  const dir = '/run/opencode-pty-kept';
  const connect = await sandbox.exec(['/usr/bin/node', '-e', `require('node:net').connect('${dir}/${started.id}.sock').on('connect', () => (console.log('connected'), process.exit(0))).on('error', (e) => (console.log(e.code), process.exit(0)))`], { as: 'client' });
  assert.is(connect.stdout.trim(), 'EACCES');
  assert.not.equal((await sandbox.exec(['cat', `${dir}/${started.id}.json`], { as: 'client' })).code, 0);
  assert.not.equal((await sandbox.exec(['ln', '-s', '/etc/shadow', `${dir}/1.json`], { as: 'client' })).code, 0);
  assert.is((await sandbox.exec(['stat', '-c', '%U:%G %a %F', dir])).stdout.trim(), 'root:root 700 directory');
  await agent.keep({ op: 'stop-session', id: started.id! });
  await until(async () => (await sessionUnits(sandbox)).length === 0, 15_000, 'stopped');
});

const keptFiles = async () => (await sandbox.exec(['sh', '-c', 'ls -A /run/opencode-pty-kept 2>/dev/null'])).stdout.split('\n').filter(Boolean);

// The client can make a kept start fail after the worker bound its rendezvous: a working directory it
// may read but not enter (mode 0400, its own) is opened by the client and refused by the helper's fchdir,
// before the program runs. Nothing of that session may stay in root's directory while the broker runs.
test('a kept start that fails after its rendezvous was bound leaves no file behind', async () => {
  const home = sandbox.client.home;
  const mode = (await sandbox.exec(['stat', '-c', '%a', home])).stdout.trim();
  // A kept session holds the broker up (no idle exit), so no start of a broker tidies the directory meanwhile.
  const holder = await agent.keep({ op: 'start', name: 'holder', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(holder.error, undefined, holder.message);
  const before = await keptFiles();
  const pid = await brokerPid(sandbox);
  let started;
  try {
    assert.is((await sandbox.exec(['chmod', '0400', home])).code, 0);
    started = await agent.keep({ op: 'start', name: 'f', argv: ['true'], keepMs: 60_000, read: {} });
  } finally {
    await sandbox.exec(['chmod', mode, home]);
  }
  assert.ok(started.error !== undefined, 'the start failed');
  assert.is(await brokerPid(sandbox), pid, 'the same broker: no start of a broker cleaned the directory');
  const after = await keptFiles();
  await agent.keep({ op: 'stop-session', id: holder.id! });
  await until(async () => (await sessionUnits(sandbox)).length === 0, 15_000, 'the holder stopped');
  assert.equal(after, before, 'no socket or record of the failed start is left');
});

/** A root service with an empty bounding set (no capability at all) that connects to `path`, records the
 * helper's first bytes, then sends ATTACH (conn 1, control, from offset 0, 24x80) with a socket of its own
 * on its first byte, as a worker does, and records what the helper writes there: the agent's terminal. */
const intruder = (path: string) => `
import re, socket, struct, time
def out(name, text):
    open('${OUT}.' + name, 'w').write(str(text))
out('cap', re.search(r'CapEff:\\s*(\\S+)', open('/proc/self/status').read()).group(1))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect('${path}')
except OSError as error:
    out('error', error)
    raise SystemExit(0)
out('connected', 'yes')
got = b''
while len(got) < 7:
    data = s.recv(4096)
    if not data:
        out('error', 'end of the channel before HELLO')
        raise SystemExit(0)
    got += data
out('read', got.hex())
ours, theirs = socket.socketpair()
socket.send_fds(s, [bytes([5, 0, 0, 0, 14, 1, 1]) + struct.pack('>QHH', 0, 24, 80)], [theirs.fileno()])
theirs.close()
ours.settimeout(10)
seen = b''
try:
    while b'secret-42' not in seen:
        data = ours.recv(65536)
        if not data:
            break
        seen += data
except OSError:
    pass
out('terminal', seen.decode('latin-1').encode('unicode_escape').decode())
time.sleep(600)
`;

test('a capability-less root process that queued on a rendezvous before the broker restarted does not become the control channel', async () => {
  const started = await agent.keep({ op: 'start', name: 'v', argv: ['sh', '-c', 'echo secret-$((6*7)); exec sleep 600'], keepMs: 60_000, read: { bytes: 11 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'v' });
  const run = await sandbox.exec(['systemd-run', '--unit=kept-intruder', '-p', 'CapabilityBoundingSet=', '-p', 'AmbientCapabilities=', '/usr/bin/python3', '-c', intruder(`/run/opencode-pty-kept/${started.id}.sock`)]);
  assert.is(run.code, 0, run.stderr);
  await until(async () => (await read('connected')) !== undefined || (await read('error')) !== undefined, 10_000, 'the intruder connected or failed');
  assert.is(await read('cap'), '0000000000000000', 'the intruder holds no capability');
  const connected = await read('connected');
  // The worker goes (a restart of the broker, an upgrade, a crash): the helper accepts its next channel.
  assert.is((await sandbox.systemctl('restart', BROKER_UNIT)).code, 0);
  const took = await until(async () => (await read('terminal')) !== undefined || (await read('error')) !== undefined, 10_000, 'the intruder read the terminal or failed').then(
    () => true,
    () => false,
  );
  const [hello, terminal, error] = [await read('read'), await read('terminal'), await read('error')];
  await sandbox.systemctl('stop', 'kept-intruder.service');
  assert.ok(!took || error !== undefined, `a capability-less root process (connected: ${connected}) became the session's control channel (read ${hello}) and, by ATTACH, read the agent's terminal: ${terminal}`);
  const attached = await agent.keep({ op: 'attach', name: 'v-2', id: started.id!, from: 0, read: { bytes: 11 } });
  assert.is(attached.error, undefined, `the agent attaches again after the restart: ${attached.message}`);
  const running = await sessionUnits(sandbox);
  const all = (await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*')).stdout;
  assert.is(running.length, 1, `the kept session still runs: ${JSON.stringify(running)} of ${all}`);
});

test('a capability-less root process that connects while no worker holds the session is closed unread', async () => {
  const started = await agent.keep({ op: 'start', name: 'w', argv: ['sh', '-c', 'echo secret-$((6*7)); exec sleep 600'], keepMs: 60_000, read: { bytes: 11 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'w' });
  const units = (await sessionUnits(sandbox)).length;
  // No broker and no worker now: the helper waits on its rendezvous for the next channel.
  assert.is((await sandbox.systemctl('stop', BROKER_UNIT)).code, 0);
  const probe = `
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect('/run/opencode-pty-kept/${started.id}.sock')
s.settimeout(10)
try:
    data = s.recv(64)
    print('eof' if not data else 'read ' + data.hex())
except OSError as error:
    print('error', error)
`;
  const run = await sandbox.exec(['systemd-run', '--wait', '--pipe', '-q', '-p', 'CapabilityBoundingSet=', '-p', 'AmbientCapabilities=', '/usr/bin/python3', '-c', probe]);
  assert.is(run.stdout.trim(), 'eof', `the helper answered a capability-less root outside the supervisor's cgroup: ${run.stdout} ${run.stderr}`);
  assert.is((await sessionUnits(sandbox)).length, units, 'the session runs on');
  const attached = await agent.keep({ op: 'attach', name: 'w-2', id: started.id!, from: 0, read: { bytes: 11 } });
  assert.is(attached.error, undefined, `the next broker adopts it and the agent attaches: ${attached.message}`);
  await agent.keep({ op: 'stop-session', id: started.id! });
  await until(async () => (await sessionUnits(sandbox)).length === units - 1, 15_000, 'stopped');
});

// A capability-less root could otherwise ptrace the broker or a worker (both are uid 0), or take their
// descriptors through /proc, and act as the supervisor: both clear their dumpable flag at start.
test('a capability-less root process can neither read the memory of the broker nor of its workers', async () => {
  const before = (await sessionUnits(sandbox)).length;
  const holder = await agent.keep({ op: 'start', name: 'd', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  assert.is(holder.error, undefined, holder.message);
  const broker = await brokerPid(sandbox);
  const children = (await sandbox.exec(['sh', '-c', `cat /proc/${broker}/task/*/children`])).stdout.split(/\s+/).filter(Boolean);
  assert.ok(children.length > 0, 'the broker has workers');
  for (const pid of [String(broker), ...children]) {
    const run = await sandbox.exec(['systemd-run', '--wait', '--pipe', '-q', '-p', 'CapabilityBoundingSet=', '-p', 'AmbientCapabilities=', '/bin/sh', '-c', `head -c 1 /proc/${pid}/environ >/dev/null && echo read || echo refused`]);
    assert.is(run.stdout.trim(), 'refused', `process ${pid}'s /proc/${pid}/environ read by a capability-less root (${run.stderr})`);
  }
  await agent.keep({ op: 'stop-session', id: holder.id! });
  await until(async () => (await sessionUnits(sandbox)).length === before, 15_000, 'stopped');
});

// The rendezvous directory is root's (0700), and uid 0 owns it, so a root process without any capability
// may still unlink a session's socket and bind its own there. The next worker then connects to that one:
// it takes what answers for the helper only when the kernel's record of HELLO's sender (SCM_CREDENTIALS)
// is the unit's main process as the client's uid, which such a process cannot claim.
test("a capability-less root process that puts its own socket at a kept session's rendezvous is not taken for its helper", async () => {
  const before = (await sessionUnits(sandbox)).length;
  const started = await agent.keep({ op: 'start', name: 'i', argv: ['sh', '-c', 'echo secret-$((6*7)); exec sleep 600'], keepMs: 60_000, read: { bytes: 11 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'i' });
  assert.is((await sandbox.systemctl('stop', BROKER_UNIT)).code, 0);
  const path = `/run/opencode-pty-kept/${started.id}.sock`;
  const impostor = `
import os, socket
os.unlink('${path}')
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind('${path}')
s.listen(4)
open('${OUT}.impostor-ready', 'w').write('yes')
c, _ = s.accept()
c.sendall(bytes([0x40, 0, 0, 0, 2, 0, ${HELPER_DIALECT}]))
c.settimeout(10)
got = b''
try:
    while True:
        data = c.recv(65536)
        if not data:
            break
        got += data
except OSError:
    pass
open('${OUT}.impostor-got', 'w').write(got.hex())
`;
  const run = await sandbox.exec(['systemd-run', '--unit=kept-impostor', '-p', 'CapabilityBoundingSet=', '-p', 'AmbientCapabilities=', '/usr/bin/python3', '-c', impostor]);
  assert.is(run.code, 0, run.stderr);
  await until(async () => (await read('impostor-ready')) !== undefined, 10_000, 'the impostor bound its socket');
  // A broker starts and adopts what is kept: its worker connects to the impostor's socket.
  assert.is((await sandbox.systemctl('start', BROKER_UNIT)).code, 0);
  await until(async () => (await read('impostor-got')) !== undefined, 15_000, 'the worker let the impostor go');
  const journal = await sandbox.journal();
  await sandbox.systemctl('stop', 'kept-impostor.service');
  assert.match(journal, new RegExp(`kept session \\S+ cannot be adopted: its session helper is not the one answering at its rendezvous: HELLO came from pid \\d+ uid 0, not the unit's main process \\(pid \\d+ uid ${sandbox.client.uid}\\)`));
  assert.is(await read('impostor-got'), '', 'nothing was sent to the impostor');
  // Failing closed: a session whose helper cannot be told apart is stopped, never handed to another.
  await until(async () => (await sessionUnits(sandbox)).length === before, 15_000, 'the session stopped');
});

test.run();
