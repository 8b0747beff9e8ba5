// The package as an agent developer installs it: what is packed, that the library loads from dist/ alone (on this
// runtime), and that its declarations type-check the example backend the README shows.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies?: Record<string, string>;
  scripts: Record<string, string>;
  bin: Record<string, string>;
  gypfile?: boolean;
  exports: Record<string, string | { types: string; default: string }>;
};

test('the packed files: compiled library, declarations, bundles, prebuilt binaries; no sources, no build step, no D-Bus stack', () => {
  const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' })) as {
    files: { path: string }[];
  }[];
  const files = packed[0]!.files.map(({ path }) => path);
  for (const wanted of ['dist/lib/index.js', 'dist/lib/node-pty.js', 'dist/lib/client.js', 'dist/types/lib.d.ts', 'dist/cli.js', 'dist/linux-x64/opencode_pty.node', 'dist/linux-x64/opencode-pty-session', 'examples/opencode-pty-backend.ts', 'examples/opencode-pid.ts']) {
    assert.ok(files.includes(wanted), `${wanted} is packed`);
  }
  assert.ok(!files.some((path) => path.startsWith('src/') || path.startsWith('test/')), 'no src/ or test/');
  // npm runs `node-gyp rebuild` at install for a package with a binding.gyp and no install script:
  // with neither the file nor C sources packed, an install builds nothing and needs no compiler.
  assert.ok(!files.some((path) => path === 'binding.gyp' || path.startsWith('native/') || /\.(c|cc|h)$/.test(path)), 'no binding.gyp, no C sources');
  assert.not.ok(manifest.scripts.install ?? manifest.scripts.preinstall ?? manifest.scripts.postinstall, 'no install script');
  assert.ok(!files.some((path) => path.endsWith('uwrap.node')), "no usocket addon (dbus-next's fd passing is our own addon's)");
  // opencode runs `opencode-pty daemon …` (its own PTY daemon, OPENCODE_PTY_BIN's default): no command of ours may answer.
  assert.equal(Object.keys(manifest.bin), ['opencode-ptyctl']);
  for (const heavy of ['dbus-next', 'usocket', 'node-addon-api']) assert.not.ok(manifest.dependencies?.[heavy], `${heavy} is not a dependency of an install`);
});

test('every export loads from dist/ and offers what it promises', async () => {
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    if (typeof target === 'string') continue;
    const loaded = (await import(join(root, target.default))) as Record<string, unknown>;
    if (subpath === './node-pty' || subpath === '.') assert.type(loaded.spawn, 'function', `${subpath} spawn`);
    if (subpath === './client' || subpath === '.') assert.type(loaded.connect, 'function', `${subpath} connect`);
  }
});

test('the declarations type-check the README example as a consumer compiles it', () => {
  const dir = mkdtempSync(join(process.env.TMPDIR ?? tmpdir(), 'opencode-pty-consumer-'));
  try {
    const scope = join(dir, 'node_modules');
    mkdirSync(scope, { recursive: true });
    symlinkSync(root, join(scope, manifest.name));
    symlinkSync(join(root, 'node_modules/@types'), join(scope, '@types'));
    const example = readFileSync(join(root, 'examples/opencode-pty-backend.ts'), 'utf8').replaceAll('opencode-pty-supervisor', manifest.name);
    writeFileSync(join(dir, 'backend.ts'), example);
    // The pid example, as opencode would take it (examples/opencode-pid.ts).
    writeFileSync(join(dir, 'pid.ts'), readFileSync(join(root, 'examples/opencode-pid.ts'), 'utf8').replaceAll('opencode-pty-supervisor', manifest.name));
    writeFileSync(
      join(dir, 'use.ts'),
      [
        "import { spawn, type IPty, type IExitEvent } from './backend.js';",
        "const pty: IPty = spawn('bash', ['-l'], { name: 'xterm-256color', cwd: '/', env: process.env });",
        'const sub = pty.onData((data) => void data);',
        'pty.onExit((event: IExitEvent) => void (event.exitCode + (event.signal ?? 0)));',
        "pty.write('ls\\r'); pty.resize(100, 30); pty.kill(); sub.dispose();",
        'export const pid: number = pty.pid;',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'] }, files: ['use.ts', 'pid.ts'] }),
    );
    execFileSync(process.execPath.endsWith('bun') ? 'node' : process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' });
  } catch (error) {
    assert.unreachable(`the consumer does not type-check: ${(error as { stdout?: string }).stdout ?? String(error)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
