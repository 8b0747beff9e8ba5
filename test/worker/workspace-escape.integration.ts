// The escape suite: one program (fixtures/escape-probe.py) tries every way out it knows, as the program of
// a session under each profile, beside the account's own systemd manager (its bus and private socket),
// an agent stand-in of the same account (a service holding an ssh agent's socket and its own) and
// another session's program. Every line is the errno
// the attempt met, or OK; the workspace profile's lines are what docs/security.md states.
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { appeared } from '../support/file-appeared.ts';
import { bootWorkerSandbox, startSession, withSession, workerConfig } from './harness.ts';

const PROBE = fileURLToPath(new URL('./fixtures/escape-probe.py', import.meta.url));
const STANDIN = fileURLToPath(new URL('./fixtures/agent-standin.py', import.meta.url));

let sandbox: Sandbox;
let workDir: string;
let agentPid: number;
let otherPid: number;
let stopOther: () => Promise<void>;

/** A file or directory under the client's home, made on the host through the sandbox's root and given to the client. */
function plant(inside: string, content?: string): void {
  const path = `${sandbox.root}${inside}`;
  if (content === undefined) mkdirSync(path, { recursive: true });
  else writeFileSync(path, content);
  chownSync(path, sandbox.client.uid, sandbox.client.gid);
}

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
  const config = withSession(workerConfig(sandbox), { minProfile: profile });
  const { worker, client } = await startSession(sandbox, workDir, ['/usr/bin/python3', '/opt/escape-probe.py', home, String(agentPid), String(otherPid), String(uid)], { config });
  await client.waitForOutput('probe-done');
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
    'write-outside': 'EACCES',
    'write-bashrc': 'EACCES',
    'write-authorized-keys': 'EACCES',
    'write-agent-config': 'EACCES',
    // Landlock cannot take away inside a granted tree: PID 1 binds .git read-only, the helper checked it
    // is that mount of the .git root saw; a mount point cannot be renamed.
    'write-git-hook': 'EROFS',
    'rename-git': 'EBUSY',
    // The agent is outside the session's Landlock domain, so ptrace_may_access() says no, and
    // ProtectProc=invisible then hides its /proc entry altogether.
    'write-bashrc-via-agent-root': 'ENOENT',
    'read-key-via-agent-root': 'ENOENT',
    'write-agent-mem': 'ENOENT',
    'kill-agent': 'EPERM',
    'kill-other-session': 'EPERM',
    'ptrace-agent': 'EPERM',
    'pidfd-getfd-agent': 'EPERM',
    mount: 'EPERM',
    'unshare-Urm': 'EPERM',
    setuid: 'EPERM',
    'read-ssh-key': 'EACCES',
    'read-agent-config': 'EACCES',
    'open-dev-null': 'OK',
    'open-dev-tty': 'OK',
    'write-workspace': 'OK',
    'write-tmp': 'OK',
    // /run/user is an inaccessible directory in the unit (InaccessiblePaths=); /tmp is the unit's own.
    'connect-user-bus': 'EACCES',
    'connect-user-manager': 'EACCES',
    'systemd-run-user': 'FAILED',
    'connect-ssh-agent': 'ENOENT',
    'connect-ssh-agent-via-agent-root': 'ENOENT',
    'connect-agent-socket': 'EACCES',
    // `..` from the working directory walks the unit's own tree (the helper entered it by its path
    // there, after checking it is the START's directory), so the hidden paths stay hidden.
    'connect-user-bus-via-cwd': 'EACCES',
    'write-tmp-via-cwd': 'OK',
    'host-tmp-written-via-cwd': 'false',
    // A path socket in a directory nothing hides: Landlock (ABI 7) has no right for connect().
    'connect-home-socket': 'OK',
  });
});

test('hardened: the same user\'s other doors it leaves open (docs/security.md), and the calls it filters', async () => {
  const seen = await probe('hardened');
  console.log(`# hardened: ${JSON.stringify(seen)}`);
  for (const name of ['write-outside', 'write-bashrc', 'write-authorized-keys', 'write-agent-config', 'write-bashrc-via-agent-root', 'read-key-via-agent-root', 'write-agent-mem', 'kill-agent', 'kill-other-session', 'read-ssh-key', 'read-agent-config', 'connect-user-bus', 'connect-user-manager', 'systemd-run-user', 'connect-ssh-agent-via-agent-root', 'connect-agent-socket', 'connect-home-socket']) {
    assert.is(seen[name], 'OK', name);
  }
  for (const name of ['ptrace-agent', 'pidfd-getfd-agent', 'mount', 'unshare-Urm', 'setuid']) assert.is(seen[name], 'EPERM', name);
  // Its own /tmp: the host's ssh agent socket there is not at that path.
  assert.is(seen['connect-ssh-agent'], 'ENOENT');
  // But `..` from the working directory walks the client's tree, where the unit's mounts do not exist:
  // the hidden runtime directory and the host's /tmp are reached that way (docs/security.md).
  assert.is(seen['connect-user-bus-via-cwd'], 'OK');
  assert.is(seen['host-tmp-written-via-cwd'], 'true');
});

test('default: the same programs succeed where an interactive login of the account would', async () => {
  const seen = await probe('default');
  console.log(`# default: ${JSON.stringify(seen)}`);
  for (const name of ['write-outside', 'write-bashrc', 'write-authorized-keys', 'write-agent-config', 'write-git-hook', 'rename-git', 'write-bashrc-via-agent-root', 'read-key-via-agent-root', 'write-agent-mem', 'kill-agent', 'kill-other-session', 'ptrace-agent', 'pidfd-getfd-agent', 'setuid', 'read-ssh-key', 'read-agent-config', 'open-dev-null', 'open-dev-tty', 'write-workspace', 'write-tmp', 'connect-user-bus', 'connect-user-manager', 'systemd-run-user', 'connect-ssh-agent', 'connect-ssh-agent-via-agent-root', 'connect-agent-socket', 'connect-home-socket', 'unshare-Urm', 'connect-user-bus-via-cwd', 'write-tmp-via-cwd']) {
    assert.is(seen[name], 'OK', name);
  }
  // Not root: mounting needs a capability whatever the profile.
  assert.is(seen.mount, 'EPERM');
});

test.run();
