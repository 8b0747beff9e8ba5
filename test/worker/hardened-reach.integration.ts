// The hardened profile against another hardened session of the same account: its terminal (the
// /dev/pts node is the account's own, mode 0620) is out of reach by path and through /proc/PID/fd
// (device policy); its private /tmp stays reachable through /proc/PID/root, which the kernel decides
// from the uid alone (docs/security.md says so).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, startSession, withSession, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-hardened-reach'));
});

test.after(async () => {
  await sandbox?.stop();
});

async function startHardened(argv: string[]) {
  const session = await startSession(sandbox, workDir, argv, { config: withSession(workerConfig(sandbox), { minProfile: 'hardened' }) });
  await session.client.waitFor('started');
  return session;
}

test('hardened: no opening another session\'s terminal; its private /tmp only through /proc/PID/root (a kernel rule)', async () => {
  const victim = await startHardened(['/bin/sh', '-c', 'echo "tty=$(tty) pid=$$"; echo secret > /tmp/victim-file; exec sleep 300']);
  const [, tty, pid] = /tty=(\S+) pid=(\d+)/.exec(await victim.client.waitForOutput('\r\n'))!;
  const probe = [
    `(echo INJECTED > ${tty}) 2>/dev/null && echo pts-write=ok || echo pts-write=refused`,
    `(exec 3<>/proc/${pid}/fd/0) 2>/dev/null && echo pts-by-proc=ok || echo pts-by-proc=refused`,
    `cat /proc/${pid}/root/tmp/victim-file >/dev/null 2>&1 && echo tmp-read=ok || echo tmp-read=refused`,
    `(echo x > /proc/${pid}/root/tmp/planted) 2>/dev/null && echo tmp-plant=ok || echo tmp-plant=refused`,
    'echo done',
  ].join('; ');
  const attacker = await startHardened(['/bin/sh', '-c', probe]);
  const seen = (await attacker.client.waitForOutput('done')).replaceAll('\r\n', ' ');
  await attacker.client.waitFor('exit');
  victim.client.send({ type: 'stop' });
  await victim.client.waitFor('stopped');
  assert.is(await victim.worker.exited, 0);
  assert.is(await attacker.worker.exited, 0);
  assert.not.match(victim.client.output.toString(), 'INJECTED');
  assert.is(seen.trim(), 'pts-write=refused pts-by-proc=refused tmp-read=ok tmp-plant=ok done');
});

test.run();
