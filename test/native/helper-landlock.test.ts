// The workspace profile's confinement in the session helper itself (native/session/landlock.c), run as a
// plain child (helper-harness.ts): the program writes only its directory, its helper fails before the
// fork when the directory is not at the path it was given or .git is not the read-only mount it must be.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, input, sh } from './helper-harness.ts';
import { mountLayer } from './mount-layer.ts';

const SYSTEM = ['/usr', '/bin', '/lib', '/lib64', '/etc'].map((path) => `--landlock-read=${path}`);

function scratch(): string {
  // Outside /tmp: a case below gives the session a private /tmp, which would hide a tree made there (CI's default).
  return mkdtempSync(join(tmpdir().startsWith('/tmp') ? '/var/tmp' : tmpdir(), 'opencode-pty-landlock-'));
}

async function refusedBeforeFork(run: HelperRun): Promise<string> {
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'internal');
  assert.not.ok(run.messages.some((message) => message.type === 'pid'), 'no program was forked');
  return ended.report!.text;
}

test('helper --landlock: the program writes its directory and nothing beside it, even as root', async () => {
  const base = scratch();
  try {
    const work = join(base, 'work');
    mkdirSync(work);
    // Outside: a writable mount the Landlock rules do not grant (the mount layer would say EROFS elsewhere):
    // a private /tmp, not on the list here (the worker lists the unit's own).
    const program = sh('echo in > inside && echo out > /tmp/outside; echo "rc=$?"; test -e /tmp/outside && echo leaked');
    const run = new HelperRun(program, { dir: work, options: ['--landlock', `--cwd-path=${work}`, ...SYSTEM], wrap: mountLayer(work, ['mount -t tmpfs none /tmp']) });
    const ended = await run.ended;
    assert.is(ended.report?.reason, 'exit', ended.report?.text);
    assert.match(run.text, /Permission denied[\s\S]*rc=[1-9]/, JSON.stringify(run.text));
    assert.not.match(run.text, 'leaked');
    assert.ok(existsSync(join(work, 'inside')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('helper --landlock: a path that is not the START directory, or none, ends the start before the fork', async () => {
  const base = scratch();
  try {
    for (const dir of ['a', 'b']) mkdirSync(join(base, dir));
    const elsewhere = new HelperRun(sh('touch ran'), { dir: join(base, 'a'), options: ['--landlock', `--cwd-path=${join(base, 'b')}`, ...SYSTEM] });
    assert.match(await refusedBeforeFork(elsewhere), `${join(base, 'b')} in the session's mount namespace is not the START's working directory`);
    const missing = new HelperRun(sh('touch ran'), { dir: join(base, 'a'), options: ['--landlock', `--cwd-path=${join(base, 'gone')}`, ...SYSTEM] });
    assert.match(await refusedBeforeFork(missing), `the working directory is not at ${join(base, 'gone')} in the session's mount namespace: No such file or directory`);
    // --landlock needs its path (--cwd-path alone is the hardened profile's: helper-cwd.test.ts).
    assert.match(await refusedBeforeFork(new HelperRun(sh('touch ran'), { dir: join(base, 'a'), options: ['--landlock', ...SYSTEM] })), 'usage');
    assert.not.ok(existsSync(join(base, 'a', 'ran')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('helper --readonly-git: a .git that is not on a read-only mount, or not the one root saw, ends the start before the fork', async () => {
  const base = scratch();
  try {
    mkdirSync(join(base, '.git'));
    const { dev, ino } = statSync(join(base, '.git'), { bigint: true });
    const options = (git: string) => ['--landlock', `--cwd-path=${base}`, `--readonly-git=${git}`, ...SYSTEM];
    assert.match(await refusedBeforeFork(new HelperRun(sh('touch ran'), { dir: base, options: options(`${dev}:${ino}`) })), '.git is not on a read-only mount');
    assert.match(await refusedBeforeFork(new HelperRun(sh('touch ran'), { dir: base, options: options(`${dev}:${ino + 1n}`) })), '.git is not the one the supervisor saw at START');
    rmSync(join(base, '.git'), { recursive: true });
    assert.match(await refusedBeforeFork(new HelperRun(sh('touch ran'), { dir: base, options: options(`${dev}:${ino}`) })), 'cannot keep .git read-only: No such file or directory');
    assert.match(await refusedBeforeFork(new HelperRun(sh('touch ran'), { dir: base, options: options('1:x') })), 'usage');
    assert.not.ok(existsSync(join(base, 'ran')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('helper --landlock --program-oom-score-adj: the program gets the score and stays confined; the helper keeps its own', async () => {
  const base = scratch();
  try {
    const work = join(base, 'work');
    mkdirSync(work);
    for (const dir of [base, work]) chmodSync(dir, 0o777);
    // As nobody, as in a unit: the program's /proc files are another user's until it is dumpable.
    const asNobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
    const program = sh('echo "adj=$(cat /proc/self/oom_score_adj)"; echo out > /tmp/outside; echo "rc=$?"; test -e /tmp/outside && echo leaked; echo done; exec sleep 100');
    const options = ['--landlock', `--cwd-path=${work}`, '--program-oom-score-adj=900', ...SYSTEM, '--landlock-read=/proc'];
    const run = new HelperRun(program, { dir: work, options, wrap: [...mountLayer(work, ['mount -t tmpfs none /tmp']), ...asNobody] });
    await run.waitFor('done\r\n');
    assert.match(run.text, 'adj=900\r\n', JSON.stringify(run.text));
    assert.match(run.text, /Permission denied[\s\S]*rc=[1-9]/, JSON.stringify(run.text));
    assert.not.match(run.text, 'leaked');
    assert.is(readFileSync(`/proc/${run.child.pid}/oom_score_adj`, 'utf8').trim(), '0');
    // The raiser, outside the domain, is gone and reaped: the terminal's echo comes after its SIGCHLD was read.
    run.send(input('echoed'));
    await run.waitFor('echoed');
    assert.is(readFileSync(`/proc/${run.child.pid}/task/${run.child.pid}/children`, 'utf8').trim().split(' ').length, 1);
    run.send(input('\x03'));
    assert.is((await run.ended).report?.reason, 'exit');
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test.run();
