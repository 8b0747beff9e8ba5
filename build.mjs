// Bundles the broker, the worker and the CLI into single files in dist/ that run with no
// node_modules beside them; the native addon, dbus-next's usocket addon and the session
// helper are copied next to them and loaded by path; dist/manifest.json hashes all of it.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { buildManifest } from './scripts/manifest.mjs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const out = join(root, 'dist');
// A fresh dist/ each time: the manifest lists exactly what this build shipped.
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// usocket finds its addon through bindings(), which searches from its own package folder;
// in a bundle that folder is gone, so load the copy that sits beside the bundle instead.
const usocketByPath = {
  name: 'usocket-by-path',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]usocket[\\/]index\.js$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replace(
        "require('bindings')('uwrap')",
        "require(require('node:path').join(__bundleDir, 'uwrap.node'))",
      ),
      loader: 'js',
    }));
  },
};

// dbus-next's MessageBus builds an XML builder for exported interfaces and proxies parse
// introspection XML; we do neither (raw method calls only), and xml2js with xmlbuilder and sax is
// 40% of each bundle that every worker compiles at start. A stub whose use fails loudly stands in.
const noIntrospection = {
  name: 'no-introspection',
  setup(build) {
    build.onResolve({ filter: /^xml2js$/ }, () => ({ path: 'xml2js', namespace: 'no-introspection' }));
    build.onLoad({ filter: /.*/, namespace: 'no-introspection' }, () => ({
      contents: [
        'class Unavailable {',
        "  buildObject() { throw new Error('D-Bus introspection is not bundled'); }",
        "  parseString(_xml, done) { done(new Error('D-Bus introspection is not bundled')); }",
        '}',
        'module.exports = { Builder: Unavailable, Parser: Unavailable };',
      ].join('\n'),
      loader: 'js',
    }));
  },
};

// dbus-next requires Node built-ins dynamically, so ESM output needs a real `require`.
const banner = [
  "import { createRequire as __createRequire } from 'node:module';",
  "import { fileURLToPath as __fileURLToPath } from 'node:url';",
  "import { dirname as __dirname_of } from 'node:path';",
  'const require = __createRequire(import.meta.url);',
  'const __bundleDir = __dirname_of(__fileURLToPath(import.meta.url));',
].join('\n');

const entries = {
  broker: 'src/broker/main.ts',
  worker: 'src/worker/main.ts',
  cli: 'src/cli.ts',
};

await build({
  entryPoints: Object.fromEntries(Object.entries(entries).map(([name, path]) => [name, join(root, path)])),
  outdir: out,
  // Paths in the bundle's comments are relative to this, so the output is the same from any directory.
  absWorkingDir: root,
  // …and a node_modules reached through a symlink is named by that link, not by where it points.
  preserveSymlinks: true,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  outExtension: { '.js': '.js' },
  banner: { js: `#!/usr/bin/env node\n${banner}` },
  external: ['x11'],
  plugins: [usocketByPath, noIntrospection],
  logLevel: 'warning',
  legalComments: 'none',
});

// The client library for agents (`.`, `./client`, `./node-pty`): ESM that runs on Node and on Bun with
// no dependency installed (code shared between the entries goes into chunks), typed by tsc's declarations.
const libOut = join(out, 'lib');
rmSync(libOut, { recursive: true, force: true });
await build({
  entryPoints: {
    index: join(root, 'src/lib.ts'),
    client: join(root, 'src/client/index.ts'),
    'node-pty': join(root, 'src/client/node-pty/index.ts'),
  },
  outdir: libOut,
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
  legalComments: 'none',
});
const typesOut = join(out, 'types');
rmSync(typesOut, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.lib.json')], { stdio: 'inherit' });
// The sources import with .ts extensions; a consumer resolves declarations through .js ones.
for (const file of walk(typesOut)) {
  if (!file.endsWith('.d.ts')) continue;
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g, '$1$2$3.js$2'));
}

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

const copies = [
  ['build/Release/opencode_pty.node', 'opencode_pty.node'],
  ['build/Release/opencode-pty-session', 'opencode-pty-session'],
  ['node_modules/usocket/build/Release/uwrap.node', 'uwrap.node'],
];
for (const [from, to] of copies) copyFileSync(join(root, from), join(out, to));
// The units ship with the bundle: the installer writes them from here.
mkdirSync(join(out, 'units'));
for (const name of readdirSync(join(root, 'units'))) copyFileSync(join(root, 'units', name), join(out, 'units', name));
for (const name of ['cli.js', 'broker.js', 'worker.js']) chmodSync(join(out, name), 0o755);
// Not readable by others: the kernel makes it non-dumpable from exec on (see unsafeHelper).
chmodSync(join(out, 'opencode-pty-session'), 0o711);
for (const name of ['opencode_pty.node', 'uwrap.node']) chmodSync(join(out, name), 0o644);
for (const name of readdirSync(join(out, 'units'))) chmodSync(join(out, 'units', name), 0o644);
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(buildManifest(root, out), null, 2)}\n`, { mode: 0o644 });
console.error(`built ${Object.keys(entries).map((name) => `dist/${name}.js`).join(', ')}, dist/lib/, dist/types/, dist/manifest.json`);
