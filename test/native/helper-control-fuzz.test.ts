// The kept session's control channel (control.c control_read, keep-attach.c) in-process under
// AddressSanitizer, LeakSanitizer and UBSan: a fuzz run of generated worker messages with descriptors
// riding on them (control-fuzz.c), which also fails when any descriptor outlives its session.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CFLAGS, NATIVE } from './helper-sources.ts';

const SANITIZE = ['-fsanitize=address,undefined', '-fno-sanitize-recover=all', '-fno-omit-frame-pointer', '-g', '-O1'];
const SANITIZER_ENV = { ...process.env, ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:exitcode=23', UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1' };

test('generated ATTACH, QUERY, TERMINATE and junk with 0..3 descriptors: no memory error, no leak, no descriptor left', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'opencode-pty-control-fuzz-'));
  try {
    const binary = join(scratch, 'control-fuzz');
    // Every helper source but main.c: control_read reaches ATTACH's whole path (keep-attach.c, keep-conns.c, ring.c).
    const sources = readdirSync(NATIVE).filter((name) => name.endsWith('.c') && name !== 'main.c').map((name) => join(NATIVE, name));
    execFileSync('cc', [...CFLAGS, ...SANITIZE, '-o', binary, fileURLToPath(new URL('./control-fuzz.c', import.meta.url)), ...sources]);
    const run = spawnSync(binary, ['20000', '3'], { env: SANITIZER_ENV, encoding: 'utf8' });
    assert.is(run.stderr, '', 'no sanitizer report');
    assert.is(run.status, 0);
    const [sessions, attached, refused, faults] = (/(\d+) sessions, (\d+) attached, (\d+) refused, (\d+) channel faults/.exec(run.stdout) ?? []).slice(1).map(Number);
    assert.ok(sessions! >= 200, `${sessions} sessions`);
    // Not vacuous: attaches taken and refused, and channels broken, all happened.
    assert.ok(attached! > 0 && refused! > 0 && faults! > 0, run.stdout);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test.run();
