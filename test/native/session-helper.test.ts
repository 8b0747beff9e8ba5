// The session helper run as a plain child process: cwd by fd, its terminal, the program's fds, exit status.
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HelperMessage } from '../../src/control/helper-channel.ts';
import { HelperRun, input, lines, resize, sh } from './helper-harness.ts';

const ALL_ONES = 2n ** 64n - 1n;

test('pwd is the directory of fd 0', async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'helper-cwd-')));
  try {
    const ended = await new HelperRun(sh('pwd -P'), { dir }).ended;
    assert.is(ended.code, 0);
    assert.equal(lines(ended.output.toString()), [dir]);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('the cwd follows the fd, not the path: a directory renamed after opening', async () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'helper-rename-')));
  try {
    const before = join(base, 'before');
    const after = join(base, 'after');
    mkdirSync(before);
    const dirFd = openSync(before, 'r');
    renameSync(before, after);
    mkdirSync(before); // a different directory now sits at the old path
    const run = new HelperRun(sh('pwd -P; stat -c %i .'), { dirFd });
    closeSync(dirFd);
    const ended = await run.ended;
    assert.is(ended.code, 0);
    assert.equal(lines(ended.output.toString()), [after, String(statSync(after).ino)]);
  } finally {
    rmSync(base, { recursive: true });
  }
});

test('the program runs on its own terminal: tty prints /dev/pts/N', async () => {
  const ended = await new HelperRun(['24', '80', 'tty']).ended;
  assert.is(ended.code, 0);
  assert.match(ended.output.toString(), /^\/dev\/pts\/\d+\r\n$/);
});

test('stty size shows ROWS COLS, and the new size after a RESIZE frame', async () => {
  const run = new HelperRun(['31', '97', 'sh', '-c', 'stty size; read x; stty size']);
  await run.waitFor('31 97\r\n');
  run.send(Buffer.concat([resize(50, 132), input('\n')]));
  const ended = await run.ended;
  assert.is(ended.code, 0);
  assert.match(ended.output.toString(), /31 97\r\n.*\r\n50 132\r\n$/s);
});

test('INPUT reaches read', async () => {
  const run = new HelperRun(sh('stty -echo; echo ready; read a b; echo "a=$a b=$b"'));
  await run.waitFor('ready\r\n');
  run.send(input('one two\n'));
  const ended = await run.ended;
  assert.is(ended.code, 0);
  assert.is(ended.output.toString(), 'ready\r\na=one b=two\r\n');
});

test('INPUT reaches cat, with frames split at every offset', async () => {
  const run = new HelperRun(sh('stty -echo; echo ready; cat; echo cat-done'));
  await run.waitFor('ready\r\n');
  const stream = Buffer.concat([input('hello '), resize(40, 100), input('cat\n'), input('\x04')]);
  for (let i = 0; i < stream.length; i++) run.send(stream.subarray(i, i + 1));
  const ended = await run.ended;
  assert.is(ended.code, 0);
  assert.is(ended.output.toString(), 'ready\r\nhello cat\r\ncat-done\r\n');
});

test('^C (byte 0x03) ends the program by SIGINT, and the helper ends the same way', async () => {
  const run = new HelperRun(sh('echo ready; exec sleep 100'));
  await run.waitFor('ready\r\n');
  run.send(input('\x03'));
  const ended = await run.ended;
  assert.is(ended.signal, 'SIGINT');
  assert.is(ended.report?.reason, 'exit');
});

test('exit 7 gives exit code 7 and an exit report counting the bytes', async () => {
  const run = new HelperRun(sh('stty -echo; echo ready; read x; printf 12345; exit 7'));
  await run.waitFor('ready\r\n');
  run.send(input('abc\n'));
  const ended = await run.ended;
  assert.is(ended.code, 7);
  assert.is(ended.signal, null);
  assert.is(ended.report?.reason, 'exit');
  assert.is(ended.report?.bytesIn, 4n);
  assert.is(ended.report?.bytesOut, BigInt(ended.output.length));
  assert.is(ended.report?.remainder.length, 0);
  // Its cgroup's figures come once, right before END: CPU wherever the cgroup v2 files are where the
  // helper looks (under a unit), every figure unavailable (all-ones) where they are not.
  const types = run.messages.map((m) => m.type);
  assert.equal(types.slice(-2), ['figures', 'end']);
  assert.is(types.filter((t) => t === 'figures').length, 1);
  const { figures } = run.messages.at(-2) as Extract<HelperMessage, { type: 'figures' }>;
  const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((line) => line.startsWith('0::'))!.slice(3);
  const unified = existsSync(`/sys/fs/cgroup${own === '/' ? '' : own}/cpu.stat`);
  assert.ok(unified ? figures.CPUUsageNSec > 0n && figures.CPUUsageNSec < ALL_ONES : figures.CPUUsageNSec === ALL_ONES, String(figures.CPUUsageNSec));
  if (!unified) assert.equal(Object.values(figures), Array(6).fill(ALL_ONES));
});

test('a missing program: the message on the terminal, exit code 127', async () => {
  const ended = await new HelperRun(['24', '80', 'no-such-program-for-the-helper']).ended;
  assert.is(ended.code, 127);
  assert.match(ended.output.toString(), 'opencode-pty-session: no-such-program-for-the-helper: No such file or directory');
});

test('a program that is not executable: exit code 126', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'helper-noexec-'));
  try {
    writeFileSync(join(dir, 'script'), '#!/bin/sh\n', { mode: 0o644 });
    const ended = await new HelperRun(['24', '80', join(dir, 'script')]).ended;
    assert.is(ended.code, 126);
    assert.match(ended.output.toString(), 'Permission denied');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('1 MiB of base64 arrives complete', async () => {
  const ended = await new HelperRun(sh('stty -opost; head -c 1048576 /dev/zero | base64')).ended;
  assert.is(ended.code, 0);
  const decoded = Buffer.from(ended.output.toString('latin1').replace(/\s+/g, ''), 'base64');
  assert.is(decoded.length, 1048576);
  assert.ok(decoded.every((byte) => byte === 0));
});

test('a background process still holding the terminal does not keep the helper alive', async () => {
  const ended = await new HelperRun(sh('sleep 60 & echo "pid=$!"; echo last')).ended;
  const pid = Number(/pid=(\d+)/.exec(ended.output.toString())?.[1]);
  try {
    assert.is(ended.code, 0);
    assert.match(ended.output.toString(), /last\r\n$/);
    assert.not.throws(() => process.kill(pid, 0), 'the background process outlived the helper');
  } finally {
    if (pid > 0) process.kill(pid, 'SIGKILL');
  }
});

test('the program has only fds 0-2 open (3 is ls reading /proc/self/fd)', async () => {
  const ended = await new HelperRun(['24', '80', 'ls', '/proc/self/fd']).ended;
  assert.is(ended.code, 0);
  assert.equal(ended.output.toString().trim().split(/\s+/), ['0', '1', '2', '3']);
});

test('fds 0-2 of the program are its terminal, and its stdin is not the directory', async () => {
  const ended = await new HelperRun(sh('readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2')).ended;
  const [a, b, c] = lines(ended.output.toString());
  assert.match(a!, /^\/dev\/pts\/\d+$/);
  assert.is(b, a);
  assert.is(c, a);
});

test('the helper is not dumpable, keeps the client and control above fd 2 and has /dev/null on 0-2', async () => {
  // As nobody: a dumpable process's /proc/PID files would belong to it (proc(5), PR_SET_DUMPABLE).
  const run = new HelperRun(sh('echo ready; exec sleep 100'), { as: 65534, dir: '/' });
  await run.waitFor('ready\r\n');
  const pid = run.child.pid!;
  assert.is(statSync(`/proc/${pid}/fd`).uid, 0);
  const { readFileSync, readlinkSync, readdirSync } = await import('node:fs');
  assert.match(readFileSync(`/proc/${pid}/status`, 'utf8'), /^Uid:\s+65534\s/m);
  for (const fd of [0, 1, 2]) assert.is(readlinkSync(`/proc/${pid}/fd/${fd}`), '/dev/null');
  const sockets = readdirSync(`/proc/${pid}/fd`).filter((fd) => Number(fd) > 2 && readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:'));
  assert.is(sockets.length, 2);
  run.send(input('\x03'));
  await run.ended;
});

test('--program-oom-score-adj raises the program\'s OOM score alone (a memory budget\'s OOM kill takes the program, not the helper)', async () => {
  // As nobody: raising one's own score needs no privilege (proc(5)).
  const run = new HelperRun(sh('echo "adj=$(cat /proc/self/oom_score_adj)"; exec sleep 100'), { as: 65534, dir: '/', options: ['--program-oom-score-adj=1000'] });
  await run.waitFor('adj=1000\r\n');
  const { readFileSync } = await import('node:fs');
  assert.is(readFileSync(`/proc/${run.child.pid}/oom_score_adj`, 'utf8').trim(), '0');
  run.send(input('\x03'));
  await run.ended;
  const plain = new HelperRun(sh('echo "adj=$(cat /proc/self/oom_score_adj)"'), { as: 65534, dir: '/' });
  assert.match((await plain.ended).output.toString(), 'adj=0');
});

test('a SIGINT, SIGQUIT, SIGPIPE, SIGTERM to the helper leave it running; SIGHUP hangs the program up, then drain and the same end', async () => {
  // Like an interactive shell: ignores SIGTERM, ends on SIGHUP after a last word.
  const script = "trap '' TERM; trap 'echo bye; exit 3' HUP; echo ready; while read line; do echo \"got:$line\"; done";
  const run = new HelperRun(sh(script));
  await run.waitFor('ready\r\n');
  for (const signal of ['SIGINT', 'SIGQUIT', 'SIGPIPE', 'SIGTERM'] as const) run.child.kill(signal);
  // The signals are pending before these bytes arrive: an answer means the helper lived through them.
  run.send(input('x\n'));
  await run.waitFor('got:x\r\n');
  // A stop: systemd sends SIGTERM and then SIGHUP (SendSIGHUP=yes) to the unit's processes.
  run.child.kill('SIGHUP');
  const ended = await run.ended;
  assert.is(ended.code, 3);
  assert.match(ended.output.toString(), /got:x\r\nbye\r\n$/);
  assert.is(ended.report?.reason, 'exit');
});

test('misuse: exit 2 with an internal report for bad sizes, options or no program; 1 when fd 0 is not a directory', async () => {
  for (const argv of [['0', '80', 'true'], ['24', '65536', 'true'], ['24', '+8', 'true'], ['24', '80'], ['--protocol=5', '24', '80', 'true'], ['--program-oom-score-adj=1001', '24', '80', 'true'], ['--bogus', '24', '80', 'true']]) {
    const ended = await new HelperRun(argv).ended;
    assert.is(ended.code, 2, argv.join(' '));
    assert.is(ended.report?.reason, 'internal');
    assert.match(ended.report!.text, argv[0] === '--protocol=5' ? 'protocol version 5' : 'usage: opencode-pty-session');
  }
  const dir = mkdtempSync(join(tmpdir(), 'helper-file-'));
  try {
    writeFileSync(join(dir, 'file'), '');
    const fileFd = openSync(join(dir, 'file'), 'r');
    const run = new HelperRun(['24', '80', 'true'], { dirFd: fileFd });
    closeSync(fileFd);
    const ended = await run.ended;
    assert.is(ended.code, 1);
    assert.match(ended.report!.text, 'cannot enter the working directory');
    assert.is(ended.output.length, 0);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test.run();
