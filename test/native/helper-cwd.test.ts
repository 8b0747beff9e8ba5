// --cwd-path in the session helper itself (native/session/cwd.c), run as a plain child (helper-harness.ts):
// without --landlock too (the hardened profile), the helper enters the working directory by that path
// and only if it is the directory of its fd 0; else it ends the start before the fork, saying why.
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, sh } from './helper-harness.ts';

function scratch(): string {
  return mkdtempSync(join(tmpdir(), 'opencode-pty-cwd-'));
}

async function refusedBeforeFork(run: HelperRun): Promise<string> {
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'internal');
  assert.not.ok(run.messages.some((message) => message.type === 'pid'), 'no program was forked');
  return ended.report!.text;
}

test('--cwd-path without --landlock: the program runs in the directory entered at that path', async () => {
  const base = scratch();
  try {
    const run = new HelperRun(sh('pwd; touch ran'), { dir: base, options: [`--cwd-path=${base}`] });
    const ended = await run.ended;
    assert.is(ended.report?.reason, 'exit', ended.report?.text);
    assert.match(run.text, base);
    assert.ok(existsSync(join(base, 'ran')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('--cwd-path that is not the directory of fd 0, or missing, ends the start before the fork', async () => {
  const base = scratch();
  try {
    for (const dir of ['a', 'b']) mkdirSync(join(base, dir));
    const elsewhere = new HelperRun(sh('touch ran'), { dir: join(base, 'a'), options: [`--cwd-path=${join(base, 'b')}`] });
    assert.match(await refusedBeforeFork(elsewhere), `${join(base, 'b')} in the session's mount namespace is not the START's working directory`);
    const missing = new HelperRun(sh('touch ran'), { dir: join(base, 'a'), options: [`--cwd-path=${join(base, 'gone')}`] });
    assert.match(await refusedBeforeFork(missing), `the working directory is not at ${join(base, 'gone')} in the session's mount namespace: No such file or directory`);
    // Not absolute: a usage error.
    assert.match(await refusedBeforeFork(new HelperRun(sh('touch ran'), { dir: join(base, 'a'), options: ['--cwd-path=a'] })), 'usage');
    assert.not.ok(existsSync(join(base, 'a', 'ran')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test('a path under /tmp or /var/tmp that is not there names the unit\'s private /tmp in the reason', async () => {
  const base = scratch();
  try {
    const gone = `/tmp/opencode-pty-cwd-gone-${process.pid}`;
    const run = new HelperRun(sh('touch ran'), { dir: base, options: [`--cwd-path=${gone}`] });
    const text = await refusedBeforeFork(run);
    assert.match(text, `the working directory is not at ${gone} in the session's mount namespace: No such file or directory`);
    assert.match(text, "the session has a /tmp and /var/tmp of its own, PrivateTmp=: a directory under the client's is not there");
    // Elsewhere the reason does not speak of /tmp.
    const other = await refusedBeforeFork(new HelperRun(sh('touch ran'), { dir: base, options: ['--cwd-path=/nonexistent-opencode-pty-cwd'] }));
    assert.not.match(other, 'PrivateTmp');
    assert.not.ok(existsSync(join(base, 'ran')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

// A component swapped for a symlink after root read the path: one to the same directory, or a magic link
// such as /proc/self/fd/0 (which reaches that directory in the client's mount tree, where `..` leads out
// of the unit's mounts), passes a device and inode check if followed; none is followed.
test('--cwd-path with a symbolic link on its way ends the start before the fork, even to the very directory', async () => {
  const base = scratch();
  try {
    mkdirSync(join(base, 'real'));
    symlinkSync(join(base, 'real'), join(base, 'link'));
    const linked = new HelperRun(sh('touch ran'), { dir: join(base, 'real'), options: [`--cwd-path=${join(base, 'link')}`] });
    assert.match(await refusedBeforeFork(linked), `the working directory is not at ${join(base, 'link')} in the session's mount namespace: Too many levels of symbolic links (a symbolic link on its way, which is never followed)`);
    const magic = new HelperRun(sh('touch ran'), { dir: join(base, 'real'), options: ['--cwd-path=/proc/self/fd/0'] });
    assert.match(await refusedBeforeFork(magic), 'the working directory is not at /proc/self/fd/0 in the session\'s mount namespace: Too many levels of symbolic links');
    assert.not.ok(existsSync(join(base, 'real', 'ran')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test.run();
