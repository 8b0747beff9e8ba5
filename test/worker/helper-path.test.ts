// Locating the session helper executable: found in a checkout, a coded error where it is missing.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, chownSync } from 'node:fs';
import { HELPER_NAME, HelperPathError, helperPath, unsafeHelper } from '../../src/worker/helper-path.ts';

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

test('a helper runs sessions only root-owned and unreadable by others (0711): no window before its prctl', () => {
  const dir = mkdtempSync(join(tmpdir(), 'helper-mode-'));
  const path = join(dir, HELPER_NAME);
  try {
    writeFileSync(path, '', { mode: 0o711 });
    chmodSync(path, 0o711);
    assert.is(unsafeHelper(path), undefined);
    for (const mode of [0o755, 0o744, 0o715, 0o731]) {
      chmodSync(path, mode);
      assert.match(unsafeHelper(path) ?? '', 'must not read or write', mode.toString(8));
    }
    chmodSync(path, 0o711);
    chownSync(path, 4242, 0);
    assert.match(unsafeHelper(path) ?? '', 'not root');
    assert.match(unsafeHelper(dir) ?? '', 'is not a file');
    assert.is(unsafeHelper(join(dir, 'missing')), undefined, 'absent here: systemd decides for the unit');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('the build ships the helper 0711', async () => {
  const { statSync } = await import('node:fs');
  const built = new URL(`../../dist/${process.platform}-${process.arch}/opencode-pty-session`, import.meta.url);
  assert.is(statSync(built).mode & 0o7777, 0o711);
});

test.run();
