// What a workspace START is refused, before any unit: the root, a pseudo file system, the home, its
// ancestors, the trees that start code later (a symlink to one is the tree it names: the descriptor is
// judged), and any START at all where the kernel has no Landlock (the helper reports it before its fork,
// so the program never runs unconfined).
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/index.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { HELPER_MODE } from '../sandbox/deploy.ts';
import { bootWorkerSandbox, sessionUnits, startSession, withSession, workerConfig } from './harness.ts';

const WRAPPER_SOURCE = fileURLToPath(new URL('./fixtures/no-landlock.c', import.meta.url));
const WRAPPER_INSIDE = '/opt/opencode-pty/no-landlock';

let sandbox: Sandbox;
let workDir: string;
let scratch: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-workspace-refusal'));
  scratch = mkdtempSync(join(tmpdir(), 'opencode-pty-no-landlock-'));
  const binary = join(scratch, 'no-landlock');
  execFileSync('cc', ['-std=c11', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-Werror', '-O2', '-o', binary, WRAPPER_SOURCE]);
  await sandbox.install([{ from: binary, to: WRAPPER_INSIDE, mode: HELPER_MODE }]);
  const home = `${sandbox.root}${sandbox.client.home}`;
  for (const dir of ['.ssh', '.config', '.config/systemd', '.config/systemd/user', '.local']) {
    mkdirSync(`${home}/${dir}`, { recursive: true });
    chownSync(`${home}/${dir}`, sandbox.client.uid, sandbox.client.gid);
  }
  symlinkSync(home, `${workDir}/home-link`);
});

test.after(async () => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  await sandbox?.stop();
});

async function refused(dir: string, text: string | RegExp, config = withSession(workerConfig(sandbox), { minProfile: 'workspace' })): Promise<void> {
  const { worker, client } = await startSession(sandbox, dir, ['/bin/true'], { config });
  const error = await client.waitFor('error');
  assert.is(await worker.exited, 0);
  assert.match(error.message, text, `${dir}: ${error.message}`);
  assert.is(error.code, ErrorCode.BAD_START);
  assert.equal(await sessionUnits(sandbox), []);
}

test('the root, a pseudo file system, the home and its ancestors are refused with BAD_START, no unit started', async () => {
  const home = `${sandbox.root}${sandbox.client.home}`;
  const { worker, client } = await startSession(sandbox, sandbox.root, ['/bin/true'], { config: withSession(workerConfig(sandbox), { minProfile: 'workspace' }) });
  const error = await client.waitFor('error');
  assert.is(error.code, ErrorCode.BAD_START);
  assert.match(error.message, 'workspace refused: the working directory is the root directory');
  assert.is(await worker.exited, 0);
  await refused('/proc', 'pseudo file system (proc)');
  await refused(`${sandbox.root}/proc`, 'pseudo file system (proc)');
  await refused(`${sandbox.root}/sys/fs/cgroup`, /pseudo file system \(cgroup2?\)|inside \/sys/);
  await refused(`${sandbox.root}/dev`, 'is /dev');
  await refused(home, 'the working directory is ~');
  await refused(`${sandbox.root}/home`, 'ancestor of ~');
});

test('the trees that start code later, inside them, an ancestor of one, and a symlink to the home are refused', async () => {
  const home = `${sandbox.root}${sandbox.client.home}`;
  await refused(`${home}/.ssh`, 'is ~/.ssh');
  await refused(`${home}/.config/systemd/user`, 'inside ~/.config');
  await refused(`${home}/.local`, 'ancestor of ~/.local/bin');
  // The client opens the link, so the descriptor is the home itself: judged as such, never widened.
  await refused(`${workDir}/home-link`, 'the working directory is ~');
});

test('the same directories are not judged under the default profile', async () => {
  const { worker, client } = await startSession(sandbox, `${sandbox.root}${sandbox.client.home}/.ssh`, ['/bin/true']);
  assert.is((await client.waitFor('exit')).status, 0);
  assert.is(await worker.exited, 0);
});

test('a directory the session\'s mount namespace does not have at its path is refused by the helper before its fork', async () => {
  // The sandbox's /tmp: the session unit has its own (PrivateTmp=), where this path is missing.
  const privateOnly = `${sandbox.root}/tmp/land-refusal-private-only`;
  mkdirSync(privateOnly, { recursive: true });
  chownSync(privateOnly, sandbox.client.uid, sandbox.client.gid);
  const config = withSession(workerConfig(sandbox), { minProfile: 'workspace' });
  const { worker, client } = await startSession(sandbox, privateOnly, ['/bin/sh', '-c', 'echo ran > ran-elsewhere'], { config });
  const error = await client.waitFor('error');
  assert.is(error.code, ErrorCode.START_FAILED);
  assert.match(error.message, "the working directory is not at /tmp/land-refusal-private-only in the session's mount namespace");
  assert.is(await worker.exited, 0);
  assert.not.ok(existsSync(`${privateOnly}/ran-elsewhere`));
  rmSync(privateOnly, { recursive: true, force: true });
});

test('a tree where the account\'s home does not resolve is refused (its checks cannot be made)', async () => {
  // A host directory: its tree (the host's) has no such home.
  const hostDir = mkdtempSync(join(scratch, 'host-only-'));
  const config = withSession(workerConfig(sandbox), { minProfile: 'workspace' });
  const { worker, client } = await startSession(sandbox, hostDir, ['/bin/sh', '-c', 'echo ran > ran-elsewhere'], { config });
  const error = await client.waitFor('error');
  assert.is(error.code, ErrorCode.BAD_START);
  assert.match(error.message, "workspace refused: the account's home cannot be found");
  assert.is(await worker.exited, 0);
  assert.not.ok(existsSync(`${hostDir}/ran-elsewhere`));
});

test('a mount below the workspace (the home bound into it) is refused by the helper before its fork: START_FAILED, nothing run', async () => {
  const { home } = sandbox.client;
  // Outside the home: PID 1 leaves the workspace writable where it is (ReadWritePaths=), its mounts with it.
  const project = '/srv/bound-project';
  const mounted = await sandbox.exec(['sh', '-c', `mkdir -p ${project}/sub && chown -R ${sandbox.client.uid} ${project} && mount --bind ${home} ${project}/sub`]);
  assert.is(mounted.code, 0, mounted.stderr);
  try {
    const config = withSession(workerConfig(sandbox), { minProfile: 'workspace' });
    const { worker, client } = await startSession(sandbox, `${sandbox.root}${project}`, ['/bin/sh', '-c', 'chmod 600 sub/.ssh; echo ran > ran-here'], { config });
    const error = await client.waitFor('error');
    assert.is(error.code, ErrorCode.START_FAILED);
    assert.match(error.message, `a mount at ${project}/sub lies inside the workspace`);
    assert.is(await worker.exited, 0);
    assert.not.ok(existsSync(`${sandbox.root}${project}/ran-here`));
  } finally {
    await sandbox.exec(['umount', `${project}/sub`]);
  }
});

test('without Landlock a workspace START fails before the program runs: START_FAILED naming why, nothing written by the program', async () => {
  const config = withSession(workerConfig(sandbox, { helperPath: WRAPPER_INSIDE }), { minProfile: 'workspace' });
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'echo ran > ran-unconfined'], { config });
  const error = await client.waitFor('error');
  assert.is(error.code, ErrorCode.START_FAILED);
  assert.match(error.message, 'the workspace profile needs Landlock, which this kernel does not offer (Function not implemented)');
  assert.is(client.frames.some((frame) => frame.type === 'started'), false);
  assert.is(await worker.exited, 0);
  assert.equal(await sessionUnits(sandbox), []);
  assert.not.ok(existsSync(`${workDir}/ran-unconfined`));
  // The same wrapper under the default profile runs the program: the refusal is the profile's.
  const plain = await startSession(sandbox, workDir, ['/bin/true'], { config: workerConfig(sandbox, { helperPath: WRAPPER_INSIDE }) });
  assert.is((await plain.client.waitFor('exit')).status, 0);
  assert.is(await plain.worker.exited, 0);
});

test.run();
