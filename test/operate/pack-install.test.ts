// The published package installs with no build step: `npm pack`, then `npm install -g` of the tarball
// into a fresh prefix with a PATH that holds node and sh only (no make, cc or g++), offline. The
// installed command runs, and the installed addon loads from the package's dist/<platform>/.
// A Bun install into an agent project (no script runs) loads the client side with the same addon.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-pack-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** npm's own script, run by this Node: the bare PATH below holds no npm. */
function npmCli(): string {
  const npm = execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim();
  return join(execFileSync('readlink', ['-f', npm], { encoding: 'utf8' }).trim(), '..', '..', 'bin', 'npm-cli.js');
}

let packedTarball: string | undefined;
/** The package as npm publishes it (dist/ as built: npm test builds it first). */
function tarball_(): string {
  if (packedTarball) return packedTarball;
  const packed = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: root, encoding: 'utf8' });
  assert.is(packed.status, 0, packed.stderr);
  packedTarball = join(dir, readdirSync(dir).find((name) => name.endsWith('.tgz'))!);
  return packedTarball;
}

test('npm pack, then npm install -g of the tarball with no compiler on PATH: the command runs, the addon loads', () => {
  const tarball = tarball_();
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  symlinkSync('/bin/sh', join(bin, 'sh'));
  const env = { HOME: join(dir, 'home'), PATH: bin, npm_config_cache: join(dir, 'cache') };
  for (const tool of ['make', 'cc', 'gcc', 'g++', 'python3']) {
    assert.is.not(spawnSync('/bin/sh', ['-c', `command -v ${tool}`], { env }).status, 0, `${tool} is not on the PATH`);
  }
  const prefix = join(dir, 'prefix');
  const started = process.hrtime.bigint();
  const install = spawnSync(process.execPath, [npmCli(), 'install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tarball], { env, encoding: 'utf8' });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  assert.is(install.status, 0, `${install.stdout}\n${install.stderr}`);
  assert.not.match(install.stdout + install.stderr, /gyp|node-gyp|rebuild/, 'nothing was built');
  process.stdout.write(`# packed ${(statSync(tarball).size / 1024).toFixed(0)} KiB; npm install -g took ${seconds.toFixed(2)} s\n`);

  const installed = join(prefix, 'lib', 'node_modules', 'opencode-pty-supervisor');
  assert.not.ok(existsSync(join(installed, 'build')), 'no build/ directory: nothing compiled');
  const command = join(prefix, 'bin', 'opencode-ptyctl');
  assert.not.ok(existsSync(join(prefix, 'bin', 'opencode-pty')), "no opencode-pty on PATH: that name is opencode's own PTY daemon");
  const help = spawnSync(command, ['--help'], { env, encoding: 'utf8' });
  assert.is(help.status, 0, help.stderr);
  assert.match(help.stdout, 'Usage:');
  // Nothing is installed on this host: status says so (exit 4), having read the package's manifest.
  const status = spawnSync(command, ['status'], { env, encoding: 'utf8' });
  assert.is(status.status, 4, status.stderr);
  // The prebuilt addon of this platform loads under this Node, from the installed package.
  const platform = `${process.platform}-${process.arch}`;
  const loaded = spawnSync(process.execPath, ['-e', `const a = require(${JSON.stringify(join(installed, 'dist', platform, 'opencode_pty.node'))}); const [x, y] = a.socketpair(); console.log(typeof x, typeof y);`], { env, encoding: 'utf8' });
  assert.is(loaded.stdout.trim(), 'number number', loaded.stderr);
  assert.is(statSync(join(installed, 'dist', platform, 'opencode-pty-session')).isFile(), true);
});

test("a Bun install into an agent's project runs no script, and the client side loads the addon", () => {
  const bun = join(root, 'node_modules', '@oven', 'bun-linux-x64', 'bin', 'bun');
  if (!existsSync(bun)) return;
  const project = join(dir, 'agent');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'agent', type: 'module' }));
  const env = { HOME: join(dir, 'bun-home'), PATH: '/usr/bin:/bin', BUN_INSTALL_CACHE_DIR: join(dir, 'bun-cache') };
  const added = spawnSync(bun, ['add', tarball_()], { cwd: project, env, encoding: 'utf8' });
  assert.is(added.status, 0, added.stderr);
  assert.not.ok(existsSync(join(project, 'node_modules', 'opencode-pty-supervisor', 'build')), 'nothing built');
  // connect() reaches the addon (its connectUnix): a missing socket is CONNECT ENOENT with the hint.
  writeFileSync(
    join(project, 'use.js'),
    "import { connect } from 'opencode-pty-supervisor/client';\ntry { await connect('/nonexistent/x.sock'); } catch (e) { console.log(e.code, e.errno, e.message.includes('opencode-ptyctl status')); }\n",
  );
  const used = spawnSync(bun, ['use.js'], { cwd: project, env, encoding: 'utf8' });
  assert.is(used.stdout.trim(), 'CONNECT ENOENT true', used.stderr);
});

test.run();
