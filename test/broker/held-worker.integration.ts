// A START whose descriptor is a FUSE file that never answers FLUSH: the worker refuses it (BAD_START)
// and closes it on a thread of its own, which then waits in D state, unkillable, holding the whole
// worker process (its memory, about 70 MB) until the file system answers. Such a worker keeps its
// session slot until it has exited, so a client can pin no more of them than it could hold sessions
// (a start that finds them all held waits the bounded time for a finishing slot, then SESSION_LIMIT).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeFrame } from '../../src/protocol/index.ts';
import { bootSandbox, SOCKET_GROUP, type Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, BROKER_UNIT, SOCKET_PATH } from '../sandbox/deploy.ts';
import { deploySupervisor } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

const HANGFS_C = fileURLToPath(new URL('../worker/fixtures/hangfs.c', import.meta.url));
const MAX_SESSIONS = 2;
const START = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 1n, argv: ['/bin/true'], env: [] }).toString('hex');

// One connection per line on stdin: HELLO, then (after WELCOME) START with the FUSE file attached;
// prints the frames answered (type and ERROR code). It never closes the file: a close would FLUSH.
const SCRIPT = `
import os, socket, struct, sys
f = os.open('/run/hangmnt/f', os.O_RDONLY)
def frames(s):
    out, data = [], b''
    while True:
        chunk = s.recv(4096)
        if not chunk: return out
        data += chunk
        while len(data) >= 5 and len(data) >= 5 + struct.unpack('>I', data[1:5])[0]:
            n = struct.unpack('>I', data[1:5])[0]
            out.append('welcome' if data[0] == 2 else 'error-%d' % struct.unpack('>H', data[5:7])[0] if data[0] == 0x0c else 'type-%d' % data[0])
            data = data[5 + n:]
            if out[-1] == 'welcome':
                s.sendmsg([bytes.fromhex('${START}')], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('i', f))])
for line in sys.stdin:
    s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect('${SOCKET_PATH}')
    s.send(bytes.fromhex('01000000084f43505400010001'))
    try: print(' '.join(frames(s)), flush=True)
    except socket.timeout: print('timeout', flush=True)
    s.close()
`;

let sandbox: Sandbox;
let build: string;

test.before(async () => {
  build = mkdtempSync(join(tmpdir(), 'hangfs-'));
  execFileSync('cc', ['-O1', '-o', join(build, 'hangfs'), HANGFS_C]);
  sandbox = await bootSandbox({ name: 'broker-held-worker' });
  // A held worker's slot counts as finishing (its end was decided), so the next start waits for it at
  // most stoppingSessionBoundMs before SESSION_LIMIT: 10 s with a 1 s stop step, within the script's 20 s.
  await deploySupervisor(sandbox, { limits: { idleExitMs: 600_000, maxSessions: MAX_SESSIONS }, session: { stopTimeoutSec: 1 } });
  await sandbox.install([
    { from: join(build, 'hangfs'), to: '/opt/hangfs', mode: 0o755 },
    { content: SCRIPT, to: '/opt/opencode-pty/test/fuse-start.py', mode: 0o644 },
  ]);
  const prep = await sandbox.exec(['/bin/sh', '-c', 'mknod /dev/fuse c 10 229 && chmod 666 /dev/fuse && mkdir /run/hangmnt']);
  assert.is(prep.code, 0, prep.stderr);
});

test.after(async () => {
  await sandbox?.stop();
  if (build) rmSync(build, { recursive: true, force: true });
});

async function endedLines(): Promise<number> {
  const journal = await sandbox.exec(['journalctl', '--no-pager', '-o', 'cat', '-u', BROKER_UNIT, '--grep', 'session \\(none\\) ended']);
  return journal.stdout.split('\n').filter(Boolean).length;
}

test('workers held by a FUSE file that never closes keep their slots: the next START is refused, and they are bounded', async () => {
  const server = sandbox.spawn(['/opt/hangfs', '/run/hangmnt', String(sandbox.client.uid)]);
  let log = '';
  await new Promise<void>((resolve, reject) => {
    server.stderr!.on('data', (chunk) => ((log += chunk), log.includes('mounted') && resolve()));
    server.on('exit', () => reject(new Error(`hangfs: ${log}`)));
  });
  writeFileSync(`${sandbox.root}/run/hangfs-hang`, 'flush');
  const agent = sandbox.spawn([
    'systemd-run', '--quiet', '--wait', '--collect', '--pipe', `--unit=${AGENT_SERVICE}`, '--service-type=exec',
    `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--property=SupplementaryGroups=${SOCKET_GROUP.name}`,
    '/usr/bin/python3', '/opt/opencode-pty/test/fuse-start.py',
  ]);
  let said = '';
  agent.stdout!.on('data', (chunk) => (said += chunk));
  const answers: string[] = [];
  try {
    for (let i = 0; i < MAX_SESSIONS + 1; i += 1) {
      agent.stdin!.write('go\n');
      await until(async () => said.split('\n').length > answers.length + 1, 30_000, `answer ${i + 1}`);
      answers.push(said.split('\n')[answers.length]!);
      // The worker has reported its session over (its journal line) before the next connection.
      if (answers[i] !== 'error-5') await until(async () => (await endedLines()) > i, 30_000, `session ${i + 1} over`);
    }
    const held = await sandbox.exec(['/bin/sh', '-c', `grep -l request_wait_answer /proc/*/task/*/wchan | wc -l`]);
    assert.equal(answers.slice(0, MAX_SESSIONS), Array(MAX_SESSIONS).fill('welcome error-7'), answers.join('; '));
    assert.is(answers[MAX_SESSIONS], 'error-5', `slots freed while their workers are held: ${answers.join('; ')}`);
    assert.is(Number(held.stdout.trim()), MAX_SESSIONS, 'held threads');
  } finally {
    // The file system goes: the held closes return, the workers exit, their slots are free.
    server.kill('SIGKILL');
    await sandbox.exec(['/bin/sh', '-c', 'rm -f /run/hangfs-hang; umount -l /run/hangmnt']);
    agent.stdin!.end();
  }
  await until(async () => (await sandbox.exec(['/bin/sh', '-c', 'grep -l request_wait_answer /proc/*/task/*/wchan | wc -l'])).stdout.trim() === '0', 30_000, 'held workers gone');
});

test.run();
