// The workspace's .git under real systemd: a directory or a gitdir: pointer file is bound read-only and
// checked by the helper; what cannot be kept read-only (a symlink, a pointer into the workspace, a path
// systemd could not write back) is refused before any unit.
import { chownSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/index.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, sessionUnits, startSession, withSession, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let home: string;

/** A directory under the client's home (host path), owned by the client. */
function dir(name: string): string {
  const path = `${home}/${name}`;
  mkdirSync(path, { recursive: true });
  chownSync(path, sandbox.client.uid, sandbox.client.gid);
  return path;
}

test.before(async () => {
  ({ sandbox } = await bootWorkerSandbox('worker-workspace-git'));
  home = `${sandbox.root}${sandbox.client.home}`;
});

test.after(async () => {
  await sandbox?.stop();
});

const config = () => withSession(workerConfig(sandbox), { minProfile: 'workspace' });

async function run(cwd: string, script: string): Promise<string> {
  const { worker, client } = await startSession(sandbox, cwd, ['/bin/sh', '-c', script], { config: config() });
  const exit = await client.waitFor('exit');
  assert.is(await worker.exited, 0);
  assert.is(exit.status, 0, client.output.toString());
  return client.output.toString();
}

async function refused(cwd: string, text: string): Promise<void> {
  const { worker, client } = await startSession(sandbox, cwd, ['/bin/true'], { config: config() });
  const error = await client.waitFor('error');
  assert.is(error.code, ErrorCode.BAD_START);
  assert.match(error.message, text);
  assert.is(await worker.exited, 0);
  assert.equal(await sessionUnits(sandbox), []);
}

test('a gitdir: pointer file is read-only, and the directory it names outside the workspace unwritable', async () => {
  dir('repo/.git/worktrees/wt');
  const work = dir('wt');
  writeFileSync(`${work}/.git`, `gitdir: ${sandbox.client.home}/repo/.git/worktrees/wt\n`);
  chownSync(`${work}/.git`, sandbox.client.uid, sandbox.client.gid);
  const said = await run(work, `(echo "gitdir: /tmp/x" > .git) 2>&1; (echo x > ${sandbox.client.home}/repo/.git/worktrees/wt/HEAD) 2>&1; echo file-ok > other; cat .git; true`);
  // The first meets .git's read-only bind; the second a home covered in the unit, where only the
  // workspace is bound back (Landlock denies it too: helper-landlock.test.ts).
  assert.is(said.split('Read-only file system').length - 1, 1, said);
  assert.match(said, `cannot create ${sandbox.client.home}/repo/.git/worktrees/wt/HEAD: Directory nonexistent`);
  assert.not.ok(existsSync(`${sandbox.root}${sandbox.client.home}/repo/.git/worktrees/wt/HEAD`));
  assert.match(said, `gitdir: ${sandbox.client.home}/repo/.git/worktrees/wt`);
});

test('what cannot be kept read-only is refused: a symlink, a pointer into the workspace, a path with a space', async () => {
  const linked = dir('linked');
  dir('elsewhere/.git');
  symlinkSync(`${sandbox.client.home}/elsewhere/.git`, `${linked}/.git`);
  await refused(linked, 'workspace refused: .git is neither a directory nor a gitdir: file (ELOOP)');
  const inside = dir('inside');
  dir('inside/gitdir');
  writeFileSync(`${inside}/.git`, 'gitdir: gitdir\n');
  await refused(inside, 'the gitdir: of .git lies inside the working directory');
  const spaced = dir('with space');
  dir('with space/.git');
  await refused(spaced, 'cannot be bound read-only by systemd');
  // Without a .git too: the workspace itself is made writable by its path (ReadWritePaths=).
  const plain = dir('plain space');
  await refused(plain, 'cannot be made writable by systemd');
});

test('the terminal still works inside the Landlock domain: ^C and a SIGNAL frame reach the program', async () => {
  const work = dir('terminal');
  const script = 'trap "echo got-int" INT; trap "echo got-usr1; exit 3" USR1; echo ready; while :; do sleep 0.05; done';
  const { worker, client } = await startSession(sandbox, work, ['/bin/bash', '-c', script], { config: config() });
  await client.waitForOutput('ready');
  // The kernel's line discipline signals the foreground group (no scope applies to it)...
  client.send({ type: 'input', data: Buffer.from([3]) });
  await client.waitForOutput('got-int');
  // ...and the helper, whose domain holds the program's, may signal it.
  client.send({ type: 'signal', signal: 10 });
  assert.is((await client.waitFor('exit')).status, 3);
  assert.is(await worker.exited, 0);
});

test.run();
