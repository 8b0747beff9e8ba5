// One session's program cannot attach to another session's helper (same account, no Yama): the
// helper is non-dumpable, so pidfd_getfd(2) and /proc/PID/fd on it fail with EPERM.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { HELPER_MODE } from '../sandbox/deploy.ts';
import { bootWorkerSandbox, startSession, withSession, workerConfig } from './harness.ts';
import { until } from '../support/wait.ts';

/** Tries to take fd 1 of each PID with pidfd_getfd and to list its /proc fds; prints one line per PID. */
const PROBE = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for pid in map(int, sys.argv[1:]):
    pidfd = os.pidfd_open(pid)
    got = libc.syscall(438, pidfd, 1, 0)  # pidfd_getfd
    getfd = "ok" if got >= 0 else os.strerror(ctypes.get_errno())
    try:
        os.listdir(f"/proc/{pid}/fd")
        listing = "ok"
    except OSError as error:
        listing = error.strerror
    extra = ""
    if os.environ.get("PROBE_MORE"):
        if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
            attach = "ok"
            os.waitpid(pid, 0)
            libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
        else:
            attach = os.strerror(ctypes.get_errno())
        try:
            open(f"/proc/{pid}/mem", "rb").close()
            mem = "ok"
        except OSError as error:
            mem = error.strerror
        extra = f" ptrace={attach} mem={mem}"
    print(f"{pid} getfd={getfd} fd-list={listing}{extra}", flush=True)
`;

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-helper-isolation'));
  await sandbox.install([{ content: PROBE, to: '/opt/opencode-pty/test/probe.py', mode: 0o644 }]);
});

test.after(async () => {
  await sandbox?.stop();
});

/** A session with the probe's allowlist, once STARTED. */
async function startedSession(argv: string[], options: { profile?: 'default' | 'hardened'; env?: Record<string, string> } = {}) {
  const config = withSession(workerConfig(sandbox), { minProfile: options.profile ?? 'default', environmentAllowlist: ['PROBE_MORE'] });
  const session = await startSession(sandbox, workDir, argv, { config, env: options.env });
  return { ...session, started: await session.client.waitFor('started') };
}

test('another session cannot take the helper\'s fds; the program it runs stays reachable (same account)', async () => {
  const victim = await startedSession(['/bin/sh', '-c', 'echo "pid=$$"; exec sleep 300']);
  const programPid = Number(/pid=(\d+)\r\n/.exec(await victim.client.waitForOutput('\r\n'))![1]);
  const helperPid = victim.started.mainPid;
  const attacker = await startedSession(['/usr/bin/python3', '/opt/opencode-pty/test/probe.py', String(helperPid), String(programPid)]);
  const seen = await attacker.client.waitForOutput(`${programPid} getfd=`);
  await attacker.client.waitFor('exit');
  const lines = seen.split('\r\n').filter((line) => /^\d+ getfd=/.test(line));
  // The helper (the unit's main process, holding the terminal master and the client socket) refuses.
  assert.ok(lines.includes(`${helperPid} getfd=Operation not permitted fd-list=Permission denied`), seen);
  // Its program is an ordinary process of the account: the probe works, so the refusal above is real.
  assert.ok(lines.includes(`${programPid} getfd=ok fd-list=ok`), seen);
  victim.client.send({ type: 'stop' });
  await victim.client.waitFor('stopped');
  assert.is(await victim.worker.exited, 0);
  assert.is(await attacker.worker.exited, 0);
});

test(`a binary installed root-owned mode ${HELPER_MODE.toString(8)} is non-dumpable from exec on (no window before prctl)`, async () => {
  for (const [mode, expected] of [
    [HELPER_MODE, 'getfd=Operation not permitted fd-list=Permission denied'],
    [0o755, 'getfd=ok fd-list=ok'],
  ] as const) {
    const path = `/opt/opencode-pty/test/sleep-${mode.toString(8)}`;
    await sandbox.exec(['/bin/sh', '-c', `cp /bin/sleep ${path} && chmod ${mode.toString(8)} ${path}`]);
    const target = sandbox.spawn([path, '300'], { as: 'client' });
    try {
      const pid = await waitForPid(path);
      const probe = await sandbox.exec(['/usr/bin/python3', '/opt/opencode-pty/test/probe.py', String(pid)], { as: 'client' });
      assert.is(probe.stdout.trim(), `${pid} ${expected}`, probe.stderr);
    } finally {
      target.kill('SIGKILL');
    }
  }
});

test('the hardened profile: no ptrace, pidfd_getfd or process_vm of another session; /proc/PID/mem remains (same uid)', async () => {
  const victim = await startedSession(['/bin/sh', '-c', 'echo "pid=$$"; exec sleep 300']);
  const programPid = Number(/pid=(\d+)\r\n/.exec(await victim.client.waitForOutput('\r\n'))![1]);
  const probe = ['/usr/bin/python3', '/opt/opencode-pty/test/probe.py', String(programPid)];
  const plain = await startedSession(probe, { env: { PROBE_MORE: '1' } });
  const plainSeen = await plain.client.waitForOutput(`${programPid} getfd=`);
  await plain.client.waitFor('exit');
  // The default profile: the account reaches its own processes, as the kernel allows.
  assert.match(plainSeen, `${programPid} getfd=ok fd-list=ok ptrace=ok mem=ok`);
  const hardened = await startedSession(probe, { profile: 'hardened', env: { PROBE_MORE: '1' } });
  const hardenedSeen = await hardened.client.waitForOutput(`${programPid} getfd=`);
  await hardened.client.waitFor('exit');
  // The hardened profile's filter refuses the calls; what the kernel decides by uid alone stays
  // (listing /proc/PID/fd, opening /proc/PID/mem): docs/security.md says so, and what would close it.
  assert.match(hardenedSeen, `${programPid} getfd=Operation not permitted fd-list=ok ptrace=Operation not permitted mem=ok`);
  // A hardened session is still an interactive terminal.
  const shell = await startedSession(['/bin/sh', '-c', 'tty; echo works'], { profile: 'hardened' });
  assert.match(await shell.client.waitForOutput('works'), /\/dev\/pts\/\d+/);
  await shell.client.waitFor('exit');
  victim.client.send({ type: 'stop' });
  await victim.client.waitFor('stopped');
  for (const session of [victim, plain, hardened, shell]) assert.is(await session.worker.exited, 0);
});

/** The PID inside the sandbox of the one process running `path` (pgrep, as it has no event to wait on). */
async function waitForPid(path: string): Promise<number> {
  let found = '';
  await until(async () => (found = (await sandbox.exec(['pgrep', '-f', `^${path} 300$`])).stdout.trim()) !== '', 2000, `${path} to start`);
  return Number(found.split('\n')[0]);
}

test.run();
