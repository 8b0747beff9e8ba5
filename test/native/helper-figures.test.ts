// The session helper's reading of its cgroup's figures (native/session/figures.c), on made-up cgroup
// files: what the kernel writes is summed and scaled as systemd does, and a file that is missing,
// odd or too large gives "unavailable" (all-ones), never 0 or a wrapped number.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CFLAGS, NATIVE } from './helper-sources.ts';

const ALL_ONES = 2n ** 64n - 1n;
let scratch: string;
let driver: string;

test.before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'opencode-pty-figures-'));
  driver = join(scratch, 'figures-driver');
  execFileSync('cc', [...CFLAGS, '-O2', '-o', driver, fileURLToPath(new URL('./figures-driver.c', import.meta.url)), join(NATIVE, 'figures.c')]);
});

test.after(() => rmSync(scratch, { recursive: true, force: true }));

let cases = 0;
/** The six figures (CPU ns, memory peak, memory current, tasks, IO read, IO write) of a directory holding `files`. */
function figures(files: Record<string, string>): bigint[] {
  const dir = join(scratch, `cgroup-${(cases += 1)}`);
  execFileSync('mkdir', [dir]);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return execFileSync(driver, [dir], { encoding: 'utf8' }).trim().split('\n').map(BigInt);
}

test('the kernel\'s files: usage_usec in ns, counters as written, rbytes and wbytes summed over devices', () => {
  assert.equal(
    figures({
      'cpu.stat': 'usage_usec 12500\nuser_usec 10000\nsystem_usec 2500\nnr_periods 0\n',
      'memory.peak': '4194304\n',
      'memory.current': '65536\n',
      'pids.current': '3\n',
      'io.stat': '8:0 rbytes=100 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n259:0 rbytes=5 wbytes=7 rios=1 wios=1 dbytes=0 dios=0\n',
    }),
    [12_500_000n, 4_194_304n, 65_536n, 3n, 105n, 27n],
  );
});

test('a controller the cgroup lacks: its figures are unavailable; an empty io.stat is no IO at all', () => {
  assert.equal(figures({ 'cpu.stat': 'usage_usec 7\n' }), [7000n, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES]);
  assert.equal(figures({ 'cpu.stat': 'usage_usec 7\n', 'io.stat': '' }), [7000n, ALL_ONES, ALL_ONES, ALL_ONES, 0n, 0n]);
  assert.equal(figures({}), Array(6).fill(ALL_ONES));
});

test('odd contents are no figure: a limit\'s "max", empty, signs, 21 digits, past 2^64-1, a key inside another word', () => {
  assert.equal(
    figures({ 'cpu.stat': 'user_usec 5\nxusage_usec 9\n', 'memory.peak': 'max\n', 'memory.current': '', 'pids.current': '-1\n' }),
    [ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES, ALL_ONES],
  );
  assert.equal(figures({ 'cpu.stat': 'usage_usec 18446744073709552\n', 'memory.peak': '18446744073709551616\n', 'memory.current': '123456789012345678901\n' }).slice(0, 3), [
    ALL_ONES,
    ALL_ONES,
    ALL_ONES,
  ]);
  // An odd value makes its figure unavailable, as systemd fails the whole read; a key inside another
  // word is not the key, and a line without it adds nothing.
  assert.equal(figures({ 'io.stat': '8:0 rbytes=abc wbytes=4\n8:16 xrbytes=9 rbytes=2\n' }).slice(4), [ALL_ONES, 4n]);
  assert.equal(figures({ 'io.stat': '8:0 xrbytes=9 wbytes=4\n8:16 rbytes=2 wbytes=1\n' }).slice(4), [2n, 5n]);
  // A sum that would wrap is no figure.
  assert.equal(figures({ 'io.stat': '8:0 rbytes=18446744073709551614 wbytes=1\n8:16 rbytes=5 wbytes=1\n' }).slice(4), [ALL_ONES, 2n]);
});

test('a file larger than the reader keeps is no figure, not the sum of its first part', () => {
  const line = (i: number) => `${8 + (i % 200)}:${i} rbytes=123456789 wbytes=1 rios=1 wios=1 dbytes=0 dios=0\n`;
  const lines = (count: number) => Array.from({ length: count }, (_, i) => line(i)).join('');
  const fits = lines(900);
  assert.ok(fits.length < 65535, String(fits.length));
  assert.equal(figures({ 'io.stat': fits }).slice(4), [900n * 123456789n, 900n]);
  const tooLarge = lines(1200);
  assert.ok(tooLarge.length > 65536, String(tooLarge.length));
  assert.equal(figures({ 'io.stat': tooLarge }).slice(4), [ALL_ONES, ALL_ONES]);
});

test.run();
