// The prebuilt binaries are chosen by platform; a platform with none gets an error that names it,
// the platforms shipped, the glibc they need, and how to build from a checkout.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { addonPath } from '../../src/native/binding.ts';
import { noPrebuiltMessage, platformName, PREBUILT_GLIBC, PREBUILT_PLATFORMS } from '../../src/native/index.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('this host is a platform the package ships, and the build put its binaries in dist/<platform>/', () => {
  assert.ok((PREBUILT_PLATFORMS as readonly string[]).includes(platformName()));
  for (const name of ['opencode_pty.node', 'opencode-pty-session']) assert.ok(existsSync(`${root}dist/${platformName()}/${name}`), name);
});

test('a platform with no binary: the error names it, what ships, the glibc and how to build', () => {
  const message = noPrebuiltMessage('native addon (opencode_pty.node)', 'linux-riscv64', ['/x/linux-riscv64/opencode_pty.node']);
  assert.match(message, 'no native addon (opencode_pty.node) for linux-riscv64');
  assert.match(message, `linux-x64 (glibc >= ${PREBUILT_GLIBC})`);
  assert.match(message, '/x/linux-riscv64/opencode_pty.node');
  assert.match(message, 'npm ci && node build.mjs');
  // Another platform's lookup never takes this host's binary from dist/<this platform>/.
  let found = '';
  try {
    found = addonPath('linux-riscv64');
  } catch (error) {
    assert.match((error as Error).message, 'for linux-riscv64');
  }
  assert.not.match(found, `/${platformName()}/`);
});

test(`the binaries need at most GLIBC_${PREBUILT_GLIBC} (objdump -T)`, () => {
  let objdump = true;
  try {
    execFileSync('objdump', ['--version'], { stdio: 'ignore' });
  } catch {
    objdump = false;
  }
  if (!objdump) return;
  const [major, minor] = PREBUILT_GLIBC.split('.').map(Number) as [number, number];
  for (const name of ['opencode_pty.node', 'opencode-pty-session']) {
    const symbols = execFileSync('objdump', ['-T', `${root}dist/${platformName()}/${name}`], { encoding: 'utf8' });
    const versions = [...symbols.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])] as const);
    assert.ok(versions.length > 0, `${name} names glibc versions`);
    const highest = versions.reduce((a, b) => (a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1]) ? a : b));
    assert.ok(highest[0] < major || (highest[0] === major && highest[1] <= minor), `${name} needs GLIBC_${highest.join('.')}`);
  }
});

test.run();
