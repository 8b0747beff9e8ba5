// The hardened profile against another hardened session of the same account: its terminal (the
// /dev/pts node is the account's own, mode 0620) is out of reach by path and through /proc/PID/fd
// (device policy); its private /tmp stays reachable through /proc/PID/root, which the kernel decides
// from the uid alone (docs/security.md says so). Its working directory is entered by its path in the
// unit's own mount namespace (native/session/cwd.c), in a fresh unit and a warm one alike: `..` walks
// the unit's tree, a path no unit file could carry is taken whole, and a directory only the client's
// namespace has is refused before the fork.
import { chownSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/index.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, startSession, withSession, workerConfig, type WorkerProcess } from './harness.ts';

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

/** Whether the worker's session unit was its warm unit (the name it announced as warm). */
function servedWarm(worker: WorkerProcess): boolean {
  const warm = worker.messages.find((message) => message.type === 'warm');
  const unit = worker.messages.find((message) => message.type === 'unit');
  return warm !== undefined && unit !== undefined && 'name' in warm && 'name' in unit && warm.name === unit.name;
}

/** A hardened worker's config, with a warm unit (the floor's profile, which a START may draw) or none. */
const hardened = (warmUnits: number) => withSession(workerConfig(sandbox), { minProfile: 'hardened', warmUnits });

for (const warmUnits of [0, 1]) {
  const kind = warmUnits ? 'a warm unit' : 'a fresh unit';
  test(`hardened, ${kind}: \`..\` from the working directory walks the unit's tree (its private /tmp), not the client's`, async () => {
    const name = `hardened-via-cwd-${warmUnits}`;
    rmSync(`${sandbox.root}/tmp/${name}`, { force: true });
    // As many `..` as the working directory is deep: the root, of whichever tree the directory is in.
    const script = `up=$(pwd | tr -cd / | sed 's,/,../,g'); echo x > "\${up}tmp/${name}" && echo written; ls /tmp/${name} && echo own-tmp; echo done`;
    const { worker, client } = await startSession(sandbox, workDir, ['/bin/sh', '-c', script], { config: hardened(warmUnits) });
    const exit = await client.waitFor('exit');
    const seen = client.output.toString().replaceAll('\r\n', ' ');
    assert.is(exit.status, 0, seen);
    assert.is(await worker.exited, 0);
    assert.match(seen, `written /tmp/${name} own-tmp done`);
    // The client's (the sandbox's own) /tmp was not reached.
    assert.not.ok(existsSync(`${sandbox.root}/tmp/${name}`));
    assert.is(servedWarm(worker), warmUnits === 1);
  });

  test(`hardened, ${kind}: a working directory named with a space, a colon, quotes and a backslash runs there (its path is an argument, not unit-file text)`, async () => {
    // What a unit file could not carry (ReadWritePaths=): the hardened unit does not write it there.
    const name = `My Project: ${warmUnits} 'q' "d" a\\b $x;y`;
    const dir = `${workDir}/${name}`;
    mkdirSync(dir);
    chownSync(dir, sandbox.client.uid, sandbox.client.gid);
    try {
      const { worker, client } = await startSession(sandbox, dir, ['/bin/sh', '-c', 'printf "cwd=[%s]\\n" "$(pwd -P)"; echo ran > ran-here'], { config: hardened(warmUnits) });
      const exit = await client.waitFor('exit');
      const seen = client.output.toString();
      assert.is(exit.status, 0, seen);
      assert.is(await worker.exited, 0);
      assert.match(seen, `cwd=[${dir.slice(sandbox.root.length)}]`);
      assert.ok(existsSync(`${dir}/ran-here`));
      assert.is(servedWarm(worker), warmUnits === 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`hardened, ${kind}: a working directory only the client's namespace has (under its /tmp) is START_FAILED naming the private /tmp, nothing run`, async () => {
    const clientOnly = `${sandbox.root}/tmp/hardened-client-only-${warmUnits}`;
    mkdirSync(clientOnly, { recursive: true });
    chownSync(clientOnly, sandbox.client.uid, sandbox.client.gid);
    try {
      const { worker, client } = await startSession(sandbox, clientOnly, ['/bin/sh', '-c', 'echo ran > ran-here'], { config: hardened(warmUnits) });
      const error = await client.waitFor('error');
      assert.is(error.code, ErrorCode.START_FAILED, error.message);
      assert.match(error.message, `the working directory is not at /tmp/hardened-client-only-${warmUnits} in the session's mount namespace: No such file or directory`);
      assert.match(error.message, "the session has a /tmp and /var/tmp of its own, PrivateTmp=: a directory under the client's is not there");
      assert.is(client.frames.some((frame) => frame.type === 'started'), false);
      assert.is(await worker.exited, 0);
      assert.not.ok(existsSync(`${clientOnly}/ran-here`));
      assert.is(servedWarm(worker), warmUnits === 1);
    } finally {
      rmSync(clientOnly, { recursive: true, force: true });
    }
  });
}

test.run();
