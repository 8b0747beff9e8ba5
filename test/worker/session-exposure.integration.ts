// `systemd-analyze security` of a live session unit under each profile: the figures the README's
// security section states, and a bound the hardened profile must keep.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, startSession, withSession, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-session-exposure'));
});

test.after(async () => {
  await sandbox?.stop();
});

async function exposure(profile: 'default' | 'hardened' | 'workspace'): Promise<number> {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sleep', '300'], { config: withSession(workerConfig(sandbox), { minProfile: profile }) });
  const started = await client.waitFor('started');
  const analysis = await sandbox.exec(['systemd-analyze', 'security', '--no-pager', started.unit]);
  client.send({ type: 'stop' });
  await client.waitFor('stopped');
  assert.is(await worker.exited, 0);
  const score = /Overall exposure level for \S+: ([0-9.]+)/.exec(analysis.stdout);
  assert.ok(score, analysis.stdout + analysis.stderr);
  return Number(score[1]);
}

test('the hardened profile rates OK (below 4.0) where the default, an interactive shell as its user, does not', async () => {
  const plain = await exposure('default');
  const hardened = await exposure('hardened');
  // systemd cannot see Landlock: what it rates of the workspace profile is the unit's settings alone.
  const workspace = await exposure('workspace');
  console.log(`# systemd-analyze security of a session unit: default ${plain}, hardened ${hardened}, workspace ${workspace}`);
  assert.ok(hardened < 4.0, `hardened ${hardened}`);
  assert.ok(hardened < plain, `hardened ${hardened} against default ${plain}`);
  assert.ok(workspace <= hardened, `workspace ${workspace} against hardened ${hardened}`);
});

test.run();
