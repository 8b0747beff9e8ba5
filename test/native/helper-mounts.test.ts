// The workspace profile's mount checks in the session helper (native/session/mounts.c), run as a plain
// child in a private mount namespace (mount-layer.ts): without the workspace's own writable mount, with a
// mount below it, without the unit's namespace (/run/user not covered, /tmp the client's, /dev/shm not its
// own), the start ends before the fork; an operator's path reached through a symlink grants nothing; the
// unit's own /dev/shm is granted.
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, sh } from './helper-harness.ts';
import { mountLayer } from './mount-layer.ts';

const SYSTEM = ['/usr', '/bin', '/lib', '/lib64', '/etc'].map((path) => `--landlock-read=${path}`);

async function refusedBeforeFork(run: HelperRun): Promise<string> {
  const ended = await run.ended;
  assert.is(ended.report?.reason, 'internal', ended.report?.text);
  assert.not.ok(run.messages.some((message) => message.type === 'pid'), 'no program was forked');
  return ended.report!.text;
}

function withScratch(body: (base: string, work: string) => Promise<void>): () => Promise<void> {
  return async () => {
    // Never under /tmp: one case mounts a private /tmp over it, which would hide the workspace itself.
    const base = mkdtempSync(join(tmpdir().startsWith('/tmp') ? '/var/tmp' : tmpdir(), 'opencode-pty-mounts-'));
    const work = join(base, 'work');
    mkdirSync(work);
    try {
      await body(base, work);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  };
}

const options = (work: string, more: string[] = []) => ['--landlock', `--cwd-path=${work}`, ...more, ...SYSTEM];

test('a workspace that is not a writable mount of its own ends the start before the fork', withScratch(async (_base, work) => {
  const run = new HelperRun(sh('touch ran'), { dir: work, options: options(work), wrap: mountLayer(work, [], { workspaceMount: false }) });
  assert.match(await refusedBeforeFork(run), `${work} is not the writable mount the session needs (ReadWritePaths=)`);
  const readOnly = new HelperRun(sh('touch ran'), { dir: work, options: options(work), wrap: mountLayer(work, ['mount -o remount,bind,ro "$0"']) });
  assert.match(await refusedBeforeFork(readOnly), `${work} is not on a writable mount`);
  assert.not.ok(existsSync(join(work, 'ran')));
}));

test('a mount below the workspace (a bind of another tree) ends the start; the expected .git bind does not', withScratch(async (base, work) => {
  mkdirSync(join(base, 'home'));
  mkdirSync(join(work, 'sub'));
  const bound = new HelperRun(sh('touch ran'), { dir: work, options: options(work), wrap: mountLayer(work, [`mount --bind ${base}/home "$0/sub"`]) });
  assert.match(await refusedBeforeFork(bound), `a mount at ${work}/sub lies inside the workspace`);
  assert.not.ok(existsSync(join(work, 'ran')));
  mkdirSync(join(work, '.git'));
  const { dev, ino } = statSync(join(work, '.git'), { bigint: true });
  const git = new HelperRun(sh('touch ran'), { dir: work, options: options(work, [`--readonly-git=${dev}:${ino}`]), wrap: mountLayer(work, ['mount --bind "$0/.git" "$0/.git"', 'mount -o remount,bind,ro "$0/.git"']) });
  assert.is((await git.ended).report?.reason, 'exit', git.text);
  assert.ok(existsSync(join(work, 'ran')));
}));

test('a writable mount where none is expected (what PID 1 bound through a swapped symlink) ends the start; an operator\'s write path may be one', withScratch(async (base, work) => {
  mkdirSync(join(base, 'home'));
  const stray = new HelperRun(sh('touch ran'), { dir: work, options: options(work), wrap: mountLayer(work, [`mount --bind ${base}/home /mnt`, 'mount -o remount,bind,rw /mnt']) });
  assert.match(await refusedBeforeFork(stray), 'the session has a writable mount at /mnt, which it should not');
  assert.not.ok(existsSync(join(work, 'ran')));
  const listed = new HelperRun(sh('touch ran'), { dir: work, options: options(work, ['--landlock-write=/mnt']), wrap: mountLayer(work, [`mount --bind ${base}/home /mnt`, 'mount -o remount,bind,rw /mnt']) });
  assert.is((await listed.ended).report?.reason, 'exit', listed.text);
  assert.ok(existsSync(join(work, 'ran')));
}));

test('without the unit\'s mount namespace (/run/user not covered, /tmp the client\'s) the start ends before the fork', withScratch(async (_base, work) => {
  const uncovered = new HelperRun(sh('touch ran'), { dir: work, options: options(work), wrap: mountLayer(work, [], { runtimeCover: false }) });
  assert.match(await refusedBeforeFork(uncovered), 'the session\'s mount namespace is missing (/run/user is not hidden)');
  const { dev, ino } = statSync('/tmp', { bigint: true });
  const sharedTmp = new HelperRun(sh('touch ran'), { dir: work, options: options(work, [`--client-tmp=${dev}:${ino}`]), wrap: mountLayer(work) });
  assert.match(await refusedBeforeFork(sharedTmp), 'the session\'s mount namespace is missing (/tmp is not its own)');
  assert.not.ok(existsSync(join(work, 'ran')));
  const privateTmp = new HelperRun(sh('touch ran'), { dir: work, options: options(work, [`--client-tmp=${dev}:${ino}`]), wrap: mountLayer(work, ['mount -t tmpfs none /tmp']) });
  assert.is((await privateTmp.ended).report?.reason, 'exit', privateTmp.text);
}));

test('a home not covered ends the start before the fork; covered, with the workspace bound back into it, the program runs and sees nothing else there', withScratch(async (base) => {
  const home = join(base, 'home');
  const work = join(home, 'work');
  mkdirSync(work, { recursive: true });
  writeFileSync(join(home, 'planted'), '');
  const args = options(work, [`--home-cover=${home}`]);
  const bare = new HelperRun(sh('touch ran'), { dir: work, options: args, wrap: mountLayer(work) });
  assert.match(await refusedBeforeFork(bare), `the session's mount namespace is missing (${home} is not hidden)`);
  // A cover reached through a symlink anywhere on the way (PID 1 follows one) is not the home's.
  mkdirSync(join(base, 'elsewhere', 'sub'), { recursive: true });
  symlinkSync(join(base, 'elsewhere'), join(base, 'bent'));
  const bent = new HelperRun(sh('touch ran'), { dir: work, options: options(work, [`--home-cover=${base}/bent/sub`]), wrap: mountLayer(work, [`mount -t tmpfs -o ro none ${base}/elsewhere/sub`]) });
  assert.match(await refusedBeforeFork(bent), `the session's mount namespace is missing (${base}/bent/sub is not hidden)`);
  assert.not.ok(existsSync(join(work, 'ran')));
  // What PID 1 does for TemporaryFileSystem=<home>:ro with BindPaths=<workspace>: the bind's source is the host's tree.
  const cover = [`mount --bind ${base} /mnt`, `mount -t tmpfs none ${home}`, `mkdir ${work}`, `mount --bind /mnt/home/work ${work}`, `mount -o remount,bind,rw ${work}`, 'umount /mnt', `mount -o remount,ro ${home}`];
  // Landlock does not govern stat(2): the cover alone makes the home's own files absent.
  const run = new HelperRun(sh('touch ran; test -e ../planted && echo "planted=seen" || echo "planted=absent"'), { dir: work, options: args, wrap: mountLayer(work, cover) });
  assert.is((await run.ended).report?.reason, 'exit', run.text);
  assert.ok(existsSync(join(work, 'ran')));
  assert.match(run.text, 'planted=absent');
}));

test('an operator\'s path bound back into the covered home must be the directory root saw and a mount of its own, else the start ends before the fork', withScratch(async (base) => {
  const home = join(base, 'home');
  const work = join(home, 'work');
  for (const dir of [work, join(home, 'cache'), join(home, 'secret')]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(home, 'cache', 'entry'), 'cached\n');
  writeFileSync(join(home, 'secret', 'entry'), 'secret\n');
  const { dev, ino } = statSync(join(home, 'cache'), { bigint: true });
  const args = options(work, [`--home-cover=${home}`, `--home-bind=${dev}:${ino}:${home}/cache`, `--landlock-read-exact=${home}/cache`]);
  // PID 1's work: the cover, the workspace and `from` bound back at ~/cache.
  const cover = (from: string, bind = true) => [`mount --bind ${base} /mnt`, `mount -t tmpfs none ${home}`, `mkdir ${work} ${home}/cache`, `mount --bind /mnt/home/work ${work}`, `mount -o remount,bind,rw ${work}`,
    ...(bind ? [`mount --bind /mnt/home/${from} ${home}/cache`, `mount -o remount,bind,ro ${home}/cache`] : []), 'umount /mnt', `mount -o remount,ro ${home}`];
  const read = (wrap: string[]) => new HelperRun(sh(`touch ran; cat ${home}/cache/entry`), { dir: work, options: args, wrap });
  const bound = read(mountLayer(work, cover('cache')));
  assert.is((await bound.ended).report?.reason, 'exit', bound.text);
  assert.match(bound.text, 'cached');
  rmSync(join(work, 'ran'));
  // What PID 1 binds when the user put a symlink to another directory there after START.
  const swapped = read(mountLayer(work, cover('secret')));
  assert.match(await refusedBeforeFork(swapped), `${home}/cache in the session's mount namespace is not the directory the supervisor saw at START`);
  const unbound = read(mountLayer(work, cover('cache', false)));
  assert.match(await refusedBeforeFork(unbound), `${home}/cache in the session's mount namespace is not the directory the supervisor saw at START`);
  assert.not.ok(existsSync(join(work, 'ran')));
}));

test('/dev/shm that is not the unit\'s own empty tmpfs ends the start before the fork; its own is granted (POSIX shared memory works)', withScratch(async (base, work) => {
  const { dev, ino } = statSync('/dev/shm', { bigint: true });
  const client = `--client-shm=${dev}:${ino}`;
  const refused = async (wrap: string[], why: string) => {
    const run = new HelperRun(sh('touch ran'), { dir: work, options: options(work, [client]), wrap });
    assert.match(await refusedBeforeFork(run), `the session's mount namespace is missing (/dev/shm is not its own: ${why})`);
  };
  // The host's own, as a unit without TemporaryFileSystem=/dev/shm has it.
  await refused(mountLayer(work, [], { shmCover: false }), "it is the client's");
  // A tree that is no tmpfs bound there; a tmpfs that is not empty; one with another mode.
  mkdirSync(join(base, 'shm'), { mode: 0o1777 });
  await refused(mountLayer(work, [`mount --bind ${base}/shm /dev/shm`]), 'it is not a tmpfs');
  await refused(mountLayer(work, ['touch /dev/shm/planted']), 'it is not empty');
  await refused(mountLayer(work, ['chmod 0777 /dev/shm']), "it is not root's, mode 1777");
  // Nor an empty directory of the client's /dev/shm bound there: the same file system (device).
  const inHostShm = `/dev/shm/${basename(base)}`;
  try {
    await refused(mountLayer(work, [`mkdir -m 1777 ${inHostShm}`, `mount --bind ${inHostShm} /dev/shm`], { shmCover: false }), "it is the client's");
  } finally {
    rmSync(inHostShm, { recursive: true, force: true });
  }
  assert.not.ok(existsSync(join(work, 'ran')));
  const lock = 'python3 -c "import multiprocessing; multiprocessing.Lock()" && echo "lock=ok" || echo "lock=failed"';
  const own = new HelperRun(sh(lock), { dir: work, options: options(work, [client]), wrap: mountLayer(work) });
  assert.is((await own.ended).report?.reason, 'exit', own.text);
  assert.match(own.text, 'lock=ok');
}));

test('an operator\'s read path with a symlink on its way grants nothing; a plain one grants reading', withScratch(async (base, work) => {
  mkdirSync(join(base, 'secret'));
  writeFileSync(join(base, 'secret', 'key'), 'secret\n');
  symlinkSync(join(base, 'secret'), join(base, 'swapped'));
  const read = (path: string, option: string) => new HelperRun(sh(`cat ${path}/key >/dev/null && echo "read=ok" || echo "read=denied"`), { dir: work, options: options(work, [`${option}=${path}`]), wrap: mountLayer(work) });
  const exact = read(join(base, 'swapped'), '--landlock-read-exact');
  assert.is((await exact.ended).report?.reason, 'exit');
  assert.match(exact.text, 'read=denied');
  // What the built-in paths do (merged-/usr systems link /bin and /lib): the same symlink followed.
  const followed = read(join(base, 'swapped'), '--landlock-read');
  assert.is((await followed.ended).report?.reason, 'exit');
  assert.match(followed.text, 'read=ok');
  const plain = read(join(base, 'secret'), '--landlock-read-exact');
  assert.is((await plain.ended).report?.reason, 'exit');
  assert.match(plain.text, 'read=ok');
}));

test.run();
