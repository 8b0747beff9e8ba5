// The client's environment reaches the program alone: over the helper's control channel to execve, never
// through the unit's Environment=, so the session helper (the unit's main process) holds none of it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, expectNoUnits, startSession, withSession, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-program-env'));
});

test.after(async () => {
  await sandbox?.stop();
});

const CLIENT_ENV = { OCPTY_FOR_PROGRAM: 'only-the-program', LD_LIBRARY_PATH: '/nonexistent/lib', TERM: 'screen-256color', HOME: '/client-home' };

test("the program gets the client's variables; the helper's /proc/PID/environ and the unit's Environment hold none", async () => {
  const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', 'env; echo ready; read line'], {
    env: CLIENT_ENV,
    config: withSession(workerConfig(sandbox), { environmentPolicy: 'pass' }),
  });
  const started = await client.waitFor('started');
  await client.waitForOutput('ready');
  const env = client.output.toString().split('\r\n');
  for (const [name, value] of Object.entries(CLIENT_ENV)) assert.ok(env.includes(`${name}=${value}`), `${name} reaches the program`);
  assert.ok(env.some((line) => line.startsWith('USER=')), "what systemd sets for the unit's user stays");

  const helper = (await sandbox.exec(['cat', `/proc/${started.mainPid}/environ`])).stdout.split('\0');
  assert.ok(helper.some((entry) => entry.startsWith('PATH=')), 'the helper has its own environment');
  for (const name of Object.keys(CLIENT_ENV).filter((name) => name !== 'HOME')) {
    assert.not.ok(helper.some((entry) => entry.startsWith(`${name}=`)), `the helper holds no ${name}`);
  }
  assert.not.ok(helper.includes('HOME=/client-home'), "the helper's HOME is its user's");

  const shown = (await sandbox.systemctl('show', '-p', 'Environment', started.unit)).stdout.trim();
  assert.is(shown, 'Environment=', 'no client variable in the unit');

  client.send({ type: 'input', data: Buffer.from('\n') });
  const exit = await client.waitFor('exit');
  assert.is(exit.status, 0);
  await client.closed();
  await expectNoUnits(sandbox, worker);
});

test.run();
