// The workspace profile's covered home (docs/security.md "The workspace profile"): in the unit the
// account's home is an empty read-only file system; the workspace and the operator's paths under the home
// that root found are bound back, each checked by the helper to be the directory root saw.
import { readFileSync, symlinkSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, plantAsClient, startSession, withSession, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

const plant = (inside: string, content?: string) => plantAsClient(sandbox, inside, content);

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-workspace-home'));
  const { home } = sandbox.client;
  for (const dir of ['.ssh', '.cache', '.cache/tool', '.cache/out']) plant(`${home}/${dir}`);
  plant(`${home}/.ssh/id_ed25519`, 'secret key\n');
  plant(`${home}/.cache/tool/data`, 'tool data\n');
  // A symlink on an operator's path at START: root does not bind it, so it grants nothing.
  symlinkSync(`${home}/.ssh`, `${sandbox.root}${home}/.cache/linked`);
});

test.after(async () => {
  await sandbox?.stop();
});

async function run(script: string, session: { workspaceRead?: string[]; workspaceWrite?: string[] } = {}): Promise<string> {
  const config = withSession(workerConfig(sandbox), { minProfile: 'workspace', ...session });
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', script], { config });
  const exit = await client.waitFor('exit');
  assert.is(await worker.exited, 0);
  assert.is(exit.status, 0, client.output.toString());
  return client.output.toString();
}

test("the operator's paths under the home are bound back, read-only or writable as listed; the rest of the home is not there", async () => {
  const { home } = sandbox.client;
  const said = await run(`cat ${home}/.cache/tool/data; echo made > ${home}/.cache/out/made && echo wrote; (echo x > ${home}/.cache/tool/new) 2>&1; (cat ${home}/.ssh/id_ed25519) 2>&1; true`, {
    workspaceRead: [`${home}/.cache/tool`],
    workspaceWrite: [`${home}/.cache/out`],
  });
  assert.match(said, 'tool data');
  assert.match(said, 'wrote');
  assert.is(readFileSync(`${sandbox.root}${home}/.cache/out/made`, 'utf8'), 'made\n');
  assert.match(said, `cannot create ${home}/.cache/tool/new: Read-only file system`);
  assert.match(said, `${home}/.ssh/id_ed25519: No such file or directory`);
});

test("an operator's path through a symlink at START is not bound: it grants nothing", async () => {
  const { home } = sandbox.client;
  const said = await run(`(cat ${home}/.cache/linked/id_ed25519) 2>&1; true`, { workspaceRead: [`${home}/.cache/linked`] });
  assert.match(said, `${home}/.cache/linked/id_ed25519: No such file or directory`);
  assert.not.match(said, 'secret key');
});

test('under the home, the workspace is bound back into the covered home without its mounts: the home bound below it is not there', async () => {
  const { home } = sandbox.client;
  const project = `${home}/bound-project`;
  const mounted = await sandbox.exec(['sh', '-c', `mkdir -p ${project}/sub && chown -R ${sandbox.client.uid} ${project} && mount --bind ${home} ${project}/sub`]);
  assert.is(mounted.code, 0, mounted.stderr);
  try {
    const config = withSession(workerConfig(sandbox), { minProfile: 'workspace' });
    const { worker, client } = await startSession(sandbox, `${sandbox.root}${project}`, ['/bin/sh', '-c', 'echo "sub=$(ls -A sub | wc -l)"'], { config });
    await client.waitFor('exit');
    assert.is(await worker.exited, 0);
    assert.match(client.output.toString(), 'sub=0');
  } finally {
    await sandbox.exec(['umount', `${project}/sub`]);
  }
});

test.run();
