// The escape suite: one program (fixtures/escape-probe.py) tries every way out it knows, as the program of
// a session under each profile, beside the account's own systemd manager (its bus and private socket),
// an agent stand-in of the same account (a service holding an ssh agent's socket and its own) and
// another session's program. Every line is the errno
// the attempt met, or OK; the workspace profile's lines are what docs/security.md states.
import { existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { appeared } from '../support/file-appeared.ts';
import { bootWorkerSandbox, plantAsClient, startSession, withSession, workerConfig } from './harness.ts';

const PROBE = fileURLToPath(new URL('./fixtures/escape-probe.py', import.meta.url));
const STANDIN = fileURLToPath(new URL('./fixtures/agent-standin.py', import.meta.url));

let sandbox: Sandbox;
let workDir: string;
let agentPid: number;
let otherPid: number;
let stopOther: () => Promise<void>;

const plant = (inside: string, content?: string) => plantAsClient(sandbox, inside, content);

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-workspace-escape'));
  const { home, uid } = sandbox.client;
  await sandbox.install([
    { from: PROBE, to: '/opt/escape-probe.py', mode: 0o755 },
    { from: STANDIN, to: '/opt/agent-standin.py', mode: 0o755 },
    { from: '/usr/bin/id', to: '/opt/escape-suid-id', mode: 0o4755 },
  ]);
  for (const dir of ['outside', '.ssh', '.config', '.config/opencode', '.local', '.local/share', '.local/share/opencode']) plant(`${home}/${dir}`);
  plant(`${home}/.bashrc`, '# rc\n');
  plant(`${home}/.ssh/authorized_keys`, '');
  plant(`${home}/.ssh/id_ed25519`, 'secret key\n');
  plant(`${home}/.config/opencode/opencode.json`, '{}\n');
  const work = workDir.slice(sandbox.root.length);
  for (const dir of ['.git', '.git/hooks']) plant(`${work}/${dir}`);
  // The account's own systemd manager, with its bus (the sandbox masks it; logind is not there to set
  // its XDG_RUNTIME_DIR): the door a program would use to run anything outside every confinement.
  const manager = await sandbox.exec(['sh', '-c', [
    'rm -f /run/systemd/system/user@.service /run/systemd/system/user-runtime-dir@.service /run/systemd/system/user.slice /run/systemd/system/user-.slice',
    'mkdir -p /run/systemd/system/user@.service.d',
    'printf "[Service]\\nEnvironment=XDG_RUNTIME_DIR=/run/user/%%i\\n" > /run/systemd/system/user@.service.d/runtime.conf',
    'systemctl daemon-reload',
    `systemctl start user@${uid}.service`,
  ].join(' && ')]);
  assert.is(manager.code, 0, manager.stderr);
  // The account's own file in the host's /dev/shm (one tmpfs for every process of the account).
  const shm = await sandbox.exec(['sh', '-c', `printf 'shared\\n' > /dev/shm/escape-account-file && chown ${uid}:${sandbox.client.gid} /dev/shm/escape-account-file && chmod 600 /dev/shm/escape-account-file`]);
  assert.is(shm.code, 0, shm.stderr);
  const agent = await sandbox.startClientService('escape-agent.service', ['/usr/bin/python3', '/opt/agent-standin.py', home, String(uid)]);
  agentPid = agent.mainPid;
  await appeared(`${sandbox.root}${home}/agent-ready`, 10_000);
  // Another session's program (default profile), which no workspace program may signal.
  const other = await startSession(sandbox, workDir, ['/bin/sleep', '300'], { version: 2 });
  otherPid = (await other.client.waitFor('started')).programPid!;
  stopOther = async () => {
    other.client.send({ type: 'stop' });
    await other.client.waitFor('stopped');
  };
});

test.after(async () => {
  await stopOther?.();
  await sandbox?.stop();
});

/** What the probe said, and whether its write to `../../…/tmp` from its working directory landed in the sandbox's own /tmp. */
async function probe(profile: 'default' | 'hardened' | 'workspace'): Promise<Record<string, string>> {
  const { home, uid } = sandbox.client;
  const viaCwd = `${sandbox.root}/tmp/escape-via-cwd`;
  rmSync(viaCwd, { force: true });
  // What an earlier probe (under a profile that let it) made or removed outside, as it was.
  for (const made of ['linked', 'moved', 'made', 'link']) rmSync(`${sandbox.root}${home}/outside/${made}`, { recursive: true, force: true });
  plant(`${home}/outside/victim`, 'keep me\n');
  const config = withSession(workerConfig(sandbox), { minProfile: profile });
  const { worker, client } = await startSession(sandbox, workDir, ['/usr/bin/python3', '/opt/escape-probe.py', home, String(agentPid), String(otherPid), String(uid)], { config });
  await client.waitForOutput('probe-done').catch((error) => { throw new Error(`${(error as Error).message} ${JSON.stringify(client.frames)}`); });
  const exit = await client.waitFor('exit');
  assert.is(await worker.exited, 0);
  assert.is(exit.status, 0, client.output.toString());
  const lines = client.output.toString().split(/\r?\n/).map((line) => /^([a-z-]+[A-Za-z-]*)=(\S+)$/.exec(line.trim())).filter((found) => found !== null);
  return { ...Object.fromEntries(lines.map((found) => [found![1], found![2]])), 'host-tmp-written-via-cwd': String(existsSync(viaCwd)) };
}

test('workspace: every way out the probe knows is closed, and what a terminal needs still works', async () => {
  const seen = await probe('workspace');
  console.log(`# workspace: ${JSON.stringify(seen)}`);
  assert.equal(seen, {
    // The home is an empty read-only file system in the unit (TemporaryFileSystem=), the workspace bound
    // back into it; everything else is a read-only mount (ProtectSystem=strict, the homes read-only): the
    // kernel says ENOENT or EROFS before Landlock is asked, which holds them too.
    'write-outside': 'ENOENT',
    'write-bashrc': 'EROFS',
    'write-authorized-keys': 'ENOENT',
    'write-agent-config': 'ENOENT',
    // Landlock cannot take away inside a granted tree: PID 1 binds .git read-only, the helper checked it
    // is that mount of the .git root saw; a mount point cannot be renamed.
    'write-git-hook': 'EROFS',
    'rename-git': 'EBUSY',
    // The agent is outside the session's Landlock domain, so ptrace_may_access() says no, and
    // ProtectProc=invisible then hides its /proc entry altogether.
    'write-bashrc-via-agent-root': 'ENOENT',
    'read-key-via-agent-root': 'ENOENT',
    'write-agent-mem': 'ENOENT',
    // Landlock's signal scope (the unit's other settings leave signals to the same account alone).
    'kill-agent': 'EPERM',
    'kill-other-session': 'EPERM',
    // Held by other layers as well: ptrace and pidfd_getfd by the seccomp filter (as under hardened),
    // mount by the missing capability, unshare by RestrictNamespaces=, setuid by NoNewPrivileges=.
    'ptrace-agent': 'EPERM',
    'pidfd-getfd-agent': 'EPERM',
    mount: 'EPERM',
    'unshare-Urm': 'EPERM',
    setuid: 'EPERM',
    // Reading is Landlock's (its read allowlist; helper-landlock.test.ts shows its EACCES), and the home's
    // files are not there at all.
    'read-ssh-key': 'ENOENT',
    'read-agent-config': 'ENOENT',
    'open-dev-null': 'OK',
    'open-dev-tty': 'OK',
    'write-workspace': 'OK',
    'write-tmp': 'OK',
    // /run/user is an empty read-only file system in the unit (TemporaryFileSystem=); /tmp is the unit's own.
    'connect-user-bus': 'ENOENT',
    'connect-user-manager': 'ENOENT',
    'systemd-run-user': 'FAILED',
    'connect-ssh-agent': 'ENOENT',
    'connect-ssh-agent-via-agent-root': 'ENOENT',
    'connect-agent-socket': 'ENOENT',
    // `..` from the working directory walks the unit's own tree (the helper entered it by its path
    // there, after checking it is the START's directory), so the hidden paths stay hidden.
    'connect-user-bus-via-cwd': 'ENOENT',
    'connect-ssh-agent-via-cwd': 'ENOENT',
    'write-tmp-via-cwd': 'OK',
    'host-tmp-written-via-cwd': 'false',
    // /dev/shm is the unit's own empty tmpfs (TemporaryFileSystem=, checked by the helper, then granted):
    // the account's file in the host's is not there, and POSIX shared memory works.
    'read-host-shm': 'ENOENT',
    'chmod-host-shm': 'ENOENT',
    'utime-host-shm': 'ENOENT',
    'shm-lock': 'OK',
    // Path sockets under the home (Landlock ABI 7 has no right for connect()): the home is covered, so the
    // agent's and an ssh ControlMaster's, which the client holds outside the session, are not there.
    'connect-home-socket': 'ENOENT',
    'connect-ssh-control': 'ENOENT',
    // Metadata by path: Landlock (ABI 7) has no right for these; the covered home and the read-only
    // mounts hold them.
    'chmod-bashrc': 'ENOENT',
    'chown-bashrc': 'ENOENT',
    'utime-bashrc': 'ENOENT',
    'setxattr-bashrc': 'ENOENT',
    'chmod-ssh-key': 'ENOENT',
    'chown-ssh-key': 'ENOENT',
    'utime-ssh-key': 'ENOENT',
    'setxattr-ssh-key': 'ENOENT',
    'chmod-home': 'EROFS',
    'chown-home': 'EROFS',
    'utime-home': 'EROFS',
    'setxattr-home': 'EROFS',
    // ... while inside the workspace a program may still make a file executable.
    'chmod-x-workspace': 'OK',
    // Only Landlock's scopes hold these (nested domain: the program cannot signal its own helper; an
    // abstract socket bound outside the domain is out of reach).
    'signal-own-helper': 'EPERM',
    'connect-abstract-outside': 'EPERM',
    // The mount layer first, Landlock behind it (helper-landlock.test.ts shows Landlock's own EACCES):
    // ~/outside is not in the covered home.
    'truncate-outside': 'ENOENT',
    'link-out': 'ENOENT',
    'rename-out': 'ENOENT',
    'mkdir-outside': 'ENOENT',
    'symlink-outside': 'ENOENT',
    'unlink-outside': 'ENOENT',
  });
});

test('hardened: the same user\'s other doors it leaves open (docs/security.md), and the calls it filters', async () => {
  const seen = await probe('hardened');
  console.log(`# hardened: ${JSON.stringify(seen)}`);
  for (const name of ['write-outside', 'write-bashrc', 'write-authorized-keys', 'write-agent-config', 'write-bashrc-via-agent-root', 'read-key-via-agent-root', 'write-agent-mem', 'kill-agent', 'kill-other-session', 'read-ssh-key', 'read-agent-config', 'connect-user-bus', 'connect-user-manager', 'systemd-run-user', 'connect-ssh-agent-via-agent-root', 'connect-agent-socket', 'connect-home-socket', 'connect-ssh-control', 'chmod-bashrc', 'setxattr-ssh-key', 'read-host-shm', 'chmod-host-shm', 'shm-lock', 'signal-own-helper', 'connect-abstract-outside', 'truncate-outside', 'mkdir-outside']) {
    assert.is(seen[name], 'OK', name);
  }
  for (const name of ['ptrace-agent', 'pidfd-getfd-agent', 'mount', 'unshare-Urm', 'setuid']) assert.is(seen[name], 'EPERM', name);
  // Its own /tmp: the host's ssh agent socket there is not at that path.
  assert.is(seen['connect-ssh-agent'], 'ENOENT');
  // `..` from the working directory walks the unit's own tree (the helper entered it by its path there,
  // after checking it is the START's directory), not the client's: the /tmp it reaches is its private
  // one, where the ssh agent's socket is not; the user's bus is what it is by its own path (hardened
  // does not hide it, docs/security.md).
  assert.is(seen['connect-ssh-agent-via-cwd'], 'ENOENT');
  assert.is(seen['connect-user-bus-via-cwd'], seen['connect-user-bus']);
  assert.is(seen['write-tmp-via-cwd'], 'OK');
  assert.is(seen['host-tmp-written-via-cwd'], 'false');
});

test('default: the same programs succeed where an interactive login of the account would', async () => {
  const seen = await probe('default');
  console.log(`# default: ${JSON.stringify(seen)}`);
  for (const name of ['chmod-bashrc', 'chown-bashrc', 'utime-bashrc', 'setxattr-bashrc', 'chmod-ssh-key', 'chmod-home', 'chmod-x-workspace', 'signal-own-helper', 'connect-abstract-outside', 'truncate-outside', 'link-out', 'rename-out', 'mkdir-outside', 'symlink-outside', 'unlink-outside', 'write-outside', 'write-bashrc', 'write-authorized-keys', 'write-agent-config', 'write-git-hook', 'rename-git', 'write-bashrc-via-agent-root', 'read-key-via-agent-root', 'write-agent-mem', 'kill-agent', 'kill-other-session', 'ptrace-agent', 'pidfd-getfd-agent', 'setuid', 'read-ssh-key', 'read-agent-config', 'open-dev-null', 'open-dev-tty', 'write-workspace', 'write-tmp', 'connect-user-bus', 'connect-user-manager', 'systemd-run-user', 'connect-ssh-agent', 'connect-ssh-agent-via-agent-root', 'connect-agent-socket', 'connect-home-socket', 'connect-ssh-control', 'read-host-shm', 'chmod-host-shm', 'utime-host-shm', 'shm-lock', 'unshare-Urm', 'connect-user-bus-via-cwd', 'connect-ssh-agent-via-cwd', 'write-tmp-via-cwd']) {
    assert.is(seen[name], 'OK', name);
  }
  // Not root: mounting needs a capability whatever the profile.
  assert.is(seen.mount, 'EPERM');
});

test.run();
