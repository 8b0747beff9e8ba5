// Locating the session helper executable: found in a checkout, a coded error where it is missing.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HELPER_NAME, HelperPathError, helperPath } from '../../src/worker/helper-path.ts';

test('finds the built helper of this checkout', () => {
  assert.match(helperPath(), /\/build\/Release\/opencode-pty-session$/);
});

test('prefers the helper beside the running module (a bundle in dist/)', () => {
  const dist = mkdtempSync(join(tmpdir(), 'helper-dist-'));
  try {
    writeFileSync(join(dist, HELPER_NAME), '', { mode: 0o755 });
    assert.is(helperPath(dist), join(dist, HELPER_NAME));
  } finally {
    rmSync(dist, { recursive: true });
  }
});

test('throws HELPER_NOT_FOUND when there is none, or only a file that is not executable', () => {
  const base = mkdtempSync(join(tmpdir(), 'helper-none-'));
  const from = join(base, 'src', 'worker');
  try {
    mkdirSync(from, { recursive: true });
    for (const setup of [() => {}, () => writeFileSync(join(from, HELPER_NAME), '', { mode: 0o644 })]) {
      setup();
      try {
        helperPath(from);
        assert.unreachable('should throw');
      } catch (error) {
        assert.instance(error, HelperPathError);
        assert.is((error as HelperPathError).code, 'HELPER_NOT_FOUND');
        assert.ok((error as HelperPathError).candidates.includes(join(from, HELPER_NAME)));
      }
    }
  } finally {
    rmSync(base, { recursive: true });
  }
});

test.run();
