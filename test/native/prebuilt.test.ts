// The prebuilt binaries are chosen by platform; a platform with none gets an error that names it,
// the platforms shipped, the glibc they need, and how to build from a checkout.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
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
  const looked = `${root}dist/linux-riscv64/opencode_pty.node`;
  const message = noPrebuiltMessage('native addon (opencode_pty.node)', 'linux-riscv64', [looked]);
  assert.match(message, 'no native addon (opencode_pty.node) for linux-riscv64');
  // What dist/ holds: this host's platform, and linux-arm64 where it was cross-built.
  assert.match(message, new RegExp(`carries prebuilt binaries for (linux-arm64, )?linux-x64 \\(glibc >= ${PREBUILT_GLIBC.replace('.', '\\.')}\\)`));
  assert.match(message, looked);
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

/** Whether a command is on PATH. */
function available(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('linux-arm64, where it was cross-built: an aarch64 ELF needing at most the same glibc; it loads under qemu when an arm64 Node is named', () => {
  const dir = `${root}dist/linux-arm64`;
  if (!existsSync(dir) || !available('aarch64-linux-gnu-objdump')) return;
  const [major, minor] = PREBUILT_GLIBC.split('.').map(Number) as [number, number];
  for (const name of ['opencode_pty.node', 'opencode-pty-session']) {
    const header = execFileSync('aarch64-linux-gnu-objdump', ['-f', `${dir}/${name}`], { encoding: 'utf8' });
    assert.match(header, 'elf64-littleaarch64', name);
    const symbols = execFileSync('aarch64-linux-gnu-objdump', ['-T', `${dir}/${name}`], { encoding: 'utf8' });
    const highest = [...symbols.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])] as const).reduce((a, b) => (a[0] > b[0] || (a[0] === b[0] && a[1] >= b[1]) ? a : b));
    assert.ok(highest[0] < major || (highest[0] === major && highest[1] <= minor), `${name} needs GLIBC_${highest.join('.')}`);
  }
  // binfmt is not set up here: qemu is called explicitly, with Debian's aarch64 libraries as its root.
  const node = process.env.OPENCODE_PTY_ARM64_NODE;
  if (!node || !available('qemu-aarch64')) return;
  const script = `const a = require(${JSON.stringify(`${dir}/opencode_pty.node`)}); const [x] = a.socketpair(); console.log(process.arch, a.peerCredentials(x).pid === process.pid);`;
  const out = execFileSync('qemu-aarch64', ['-L', '/usr/aarch64-linux-gnu', node, '-e', script], { encoding: 'utf8' });
  assert.is(out.trim(), 'arm64 true');
  const usage = spawnSync('qemu-aarch64', ['-L', '/usr/aarch64-linux-gnu', `${dir}/opencode-pty-session`], { encoding: 'utf8' });
  const native = spawnSync(`${root}dist/${platformName()}/opencode-pty-session`, []);
  assert.is(usage.status, native.status, 'the helper runs there and refuses a missing argv as it does here');
  assert.is(usage.status, 2);
});

test.run();
