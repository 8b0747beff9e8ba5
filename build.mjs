// Bundles the broker, the worker and the CLI into single files in dist/ that run with no
// node_modules beside them; the native addon and the session helper, built for this platform, go to
// dist/<platform>-<arch>/ and are loaded by path; dist/manifest.json hashes all of it. The package
// installs with no build step: npm runs none (no install script, no binding.gyp in the package).
import { build } from 'esbuild';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { buildManifest } from './scripts/manifest.mjs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
/** The session helper's compiler flags: it parses its client's bytes, so the distribution's usual
 * hardening too (stack protector and clash protection, fortified libc calls, a read-only GOT). */
const SESSION_HELPER_CFLAGS = [
  '-std=c11', '-Wall', '-Wextra', '-O2', '-D_GNU_SOURCE',
  '-fstack-protector-strong', '-fstack-clash-protection', '-D_FORTIFY_SOURCE=2', '-Wl,-z,relro,-z,now',
];
const out = join(root, 'dist');
// A fresh dist/ each time: the manifest lists exactly what this build shipped.
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

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

// Our modules do nothing when imported but define what they export (entries aside, which esbuild always
// runs), so a folder's door (its index.ts, re-exporting the folder) brings into a bundle only what the
// bundle uses: without this, the CLI's config check would carry dbus-next through src/systemd/index.ts.
const sourcesWithoutEffects = {
  name: 'sources-without-effects',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\/.*\.ts$/ }, (args) => {
      const path = join(args.resolveDir, args.path);
      return path.startsWith(join(root, 'src') + '/') ? { path, sideEffects: false } : undefined;
    });
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

const common = {
  // Paths in the bundle's comments are relative to this, so the output is the same from any directory.
  absWorkingDir: root,
  // …and a node_modules reached through a symlink is named by that link, not by where it points.
  preserveSymlinks: true,
  bundle: true,
  platform: 'node',
  target: 'node20',
  // usocket: dbus-next requires it only in its own createConnection, which we replace (src/systemd/bus-wire.ts).
  external: ['x11', 'usocket'],
  plugins: [noIntrospection, sourcesWithoutEffects],
  logLevel: 'warning',
  legalComments: 'none',
};

// The CLI: its entry (cli.js, the bin) runs the command's bundle (cli-main.cjs) from the code cache
// made below, as the root side does. All three are CommonJS, cli.js too: dist/package.json says so
// (and dist/lib/ and dist/types/ say they are ES modules), since a Node start that runs an ES module
// sets up the ES module loader first. What `run` does not use is not in that bundle: the operator
// commands are a bundle of their own (cli-operate.cjs), required when one of them is asked for.
const cliRoot = {
  banner: { js: ['"use strict";', "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;", 'const __bundleDir = __dirname;'].join('\n') },
  define: { 'import.meta.url': '__importMetaUrl' },
  format: 'cjs',
  outExtension: { '.js': '.cjs' },
};
const operatorBundle = {
  name: 'operator-bundle',
  setup(build) {
    build.onResolve({ filter: /^\.\/operate\.ts$/ }, (args) =>
      args.importer === join(root, 'src/cli/program.ts') ? { path: 'operate', namespace: 'operator-bundle' } : undefined,
    );
    build.onResolve({ filter: /^\.\/cli-operate\.cjs$/ }, () => ({ path: './cli-operate.cjs', external: true }));
    build.onLoad({ filter: /.*/, namespace: 'operator-bundle' }, () => ({ contents: "module.exports = require('./cli-operate.cjs');", loader: 'js' }));
  },
};
await build({ ...common, ...cliRoot, entryPoints: { 'cli-main': join(root, 'src/cli/program.ts') }, outdir: out, plugins: [operatorBundle, ...common.plugins] });
await build({ ...common, ...cliRoot, entryPoints: { 'cli-operate': join(root, 'src/cli/operate.ts') }, outdir: out });
await build({ ...common, ...cliRoot, entryPoints: { cli: join(root, 'src/boot/cli.ts') }, outdir: out, outExtension: { '.js': '.js' }, banner: { js: '#!/usr/bin/env node\n"use strict";' } });

// The broker and the worker are CommonJS: a Node start that runs an ES module first sets up the ESM
// loader (≈15 ms here), and V8's code cache (src/boot/code-cache.ts) takes a classic script only.
// Each runs from a small entry (broker.cjs, worker.cjs) that evaluates its bundle (*-main.cjs) from
// the cache made below. Strict, as the ES modules they are written as.
const rootSide = { broker: 'src/broker/main.ts', worker: 'src/worker/main.ts' };
await build({
  ...common,
  entryPoints: Object.fromEntries(Object.entries(rootSide).map(([name, path]) => [`${name}-main`, join(root, path)])),
  outdir: out,
  format: 'cjs',
  outExtension: { '.js': '.cjs' },
  banner: { js: ['"use strict";', "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;", 'const __bundleDir = __dirname;'].join('\n') },
  define: { 'import.meta.url': '__importMetaUrl' },
});
await build({
  ...common,
  entryPoints: Object.fromEntries(Object.keys(rootSide).map((name) => [name, join(root, `src/boot/${name}.ts`)])),
  outdir: out,
  format: 'cjs',
  outExtension: { '.js': '.cjs' },
  // The broker's entry loads the addon (it starts the first spare worker): the addon's loader finds
  // it from import.meta.url, as in the bundles.
  banner: { js: ['#!/usr/bin/env node', '"use strict";', "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;"].join('\n') },
  define: { 'import.meta.url': '__importMetaUrl' },
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
  plugins: [sourcesWithoutEffects],
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

// Which files are ES modules: the package says all its .js are; dist/ says its own are CommonJS (cli.js);
// the library and its declarations are ES modules again.
writeFileSync(join(out, 'package.json'), '{ "type": "commonjs" }\n', { mode: 0o644 });
for (const dir of [libOut, typesOut]) writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n', { mode: 0o644 });

buildAddon();
buildSessionHelper();

// This platform's binaries (src/native/binding.ts and src/worker/helper-path.ts look here first).
const platform = `${process.platform}-${process.arch}`;
mkdirSync(join(out, platform));
const binaries = [`${platform}/opencode_pty.node`, `${platform}/opencode-pty-session`];
for (const path of binaries) copyFileSync(join(root, 'build', 'Release', path.split('/')[1]), join(out, path));
// …and the other platforms' where their cross compilers are installed (Debian's gcc-aarch64-linux-gnu).
const crossBuilt = buildCrossPlatforms().filter((cross) => cross.platform !== platform);
for (const cross of crossBuilt) {
  mkdirSync(join(out, cross.platform));
  for (const name of ['opencode_pty.node', 'opencode-pty-session']) copyFileSync(join(cross.dir, name), join(out, cross.platform, name));
  binaries.push(`${cross.platform}/opencode_pty.node`);
  chmodSync(join(out, cross.platform, 'opencode-pty-session'), 0o711);
}
// The units ship with the bundle: the installer writes them from here.
mkdirSync(join(out, 'units'));
for (const name of readdirSync(join(root, 'units'))) copyFileSync(join(root, 'units', name), join(out, 'units', name));
for (const name of ['cli.js', 'broker.cjs', 'worker.cjs']) chmodSync(join(out, name), 0o755);
await codeCaches([...Object.keys(rootSide), 'cli'].map((name) => join(out, `${name}-main.cjs`)));
// Not readable by others: the kernel makes it non-dumpable from exec on (see unsafeHelper).
chmodSync(join(out, platform, 'opencode-pty-session'), 0o711);
for (const name of [...binaries.filter((path) => path.endsWith('.node')), 'broker-main.cjs', 'worker-main.cjs', 'cli-main.cjs', 'cli-operate.cjs']) chmodSync(join(out, name), 0o644);
for (const name of readdirSync(join(out, 'units'))) chmodSync(join(out, 'units', name), 0o644);
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(buildManifest(root, out), null, 2)}\n`, { mode: 0o644 });
console.error('built dist/broker.cjs, dist/worker.cjs, dist/cli.js (with their bundles and code caches), dist/cli-operate.cjs, dist/lib/, dist/types/, dist/manifest.json');

/**
 * The Node-API addon (native/addon/, binding.gyp), built by node-gyp when it is missing or a source is
 * newer. `npm ci` in a checkout builds it too (npm runs `node-gyp rebuild` for a package with a
 * binding.gyp and no install script); this covers a checkout whose build/ was removed since.
 */
function buildAddon() {
  const binary = join(root, 'build', 'Release', 'opencode_pty.node');
  const built = statSync(binary, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const dir = join(root, 'native', 'addon');
  const inputs = [join(root, 'binding.gyp'), ...readdirSync(dir).map((name) => join(dir, name))];
  if (inputs.every((path) => statSync(path).mtimeMs < built)) return;
  const gyp = join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  // The headers of the Node that runs this, from its own install prefix, when npm does not name them
  // (npm passes npm_config_nodedir): node-gyp would download them otherwise.
  const prefix = dirname(dirname(process.execPath));
  const nodedir = process.env.npm_config_nodedir || (existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined);
  execFileSync(process.execPath, [gyp, built ? 'build' : 'rebuild', ...(nodedir ? [`--nodedir=${nodedir}`] : [])], { cwd: root, stdio: ['ignore', 2, 2] });
}

/**
 * The addon and the helper for the other Linux platforms the package ships (linux-arm64), cross-built
 * when the compilers are on PATH (node-gyp --arch with the running Node's headers, which are the same
 * for every architecture), each in build/cross/<platform>/, so build/Release stays this platform's.
 * Without them the package carries this platform's binaries only, and says so here.
 */
function buildCrossPlatforms() {
  const targets = [{ platform: 'linux-arm64', arch: 'arm64', tools: 'aarch64-linux-gnu-' }];
  const built = [];
  for (const target of targets) {
    if (`${process.platform}-${process.arch}` === target.platform) continue;
    if (spawnSync('sh', ['-c', `command -v ${target.tools}g++`], { stdio: 'ignore' }).status !== 0) {
      console.error(`${target.platform}: not built (no ${target.tools}g++ on PATH)`);
      continue;
    }
    const dir = join(root, 'build', 'cross', target.platform);
    mkdirSync(dir, { recursive: true });
    const addon = join(dir, 'opencode_pty.node');
    const addonSources = [join(root, 'binding.gyp'), ...readdirSync(join(root, 'native', 'addon')).map((name) => join(root, 'native', 'addon', name))];
    const addonAt = statSync(addon, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    if (!addonSources.every((path) => statSync(path).mtimeMs < addonAt)) {
      // node-gyp builds in ./build of its directory: a copy of binding.gyp beside a link to native/.
      copyFileSync(join(root, 'binding.gyp'), join(dir, 'binding.gyp'));
      rmSync(join(dir, 'native'), { force: true });
      execFileSync('ln', ['-s', join(root, 'native'), join(dir, 'native')]);
      const prefix = dirname(dirname(process.execPath));
      const env = { ...process.env, CC: `${target.tools}gcc`, CXX: `${target.tools}g++`, LINK: `${target.tools}g++`, AR: `${target.tools}ar` };
      execFileSync(process.execPath, [join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'), 'rebuild', `--arch=${target.arch}`, `--nodedir=${process.env.npm_config_nodedir || prefix}`, '-C', dir], { cwd: dir, env, stdio: ['ignore', 2, 2] });
      copyFileSync(join(dir, 'build', 'Release', 'opencode_pty.node'), addon);
    }
    const generated = join(root, 'build', 'generated');
    const sessionDir = join(root, 'native', 'session');
    const sources = readdirSync(sessionDir).filter((name) => name.endsWith('.c')).sort().map((name) => join(sessionDir, name));
    execFileSync(`${target.tools}gcc`, [...SESSION_HELPER_CFLAGS, `-I${generated}`, '-o', join(dir, 'opencode-pty-session'), ...sources, '-lutil'], { stdio: 'inherit' });
    built.push({ platform: target.platform, dir });
  }
  return built;
}

/**
 * The session helper (native/session/): its wire constants generated from src/protocol/, their one
 * source (scripts/helper-wire.ts writes build/generated/wire.h), then compiled into build/Release when
 * a source is newer than the binary. The install needs no compiler for it: dist/ ships it built.
 */
function buildSessionHelper() {
  const generated = join(root, 'build', 'generated');
  const generator = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'helper-wire.ts'), join(generated, 'wire.h')], { cwd: root, stdio: 'inherit' });
  if (generator.status !== 0) throw new Error(`scripts/helper-wire.ts failed: ${generator.status ?? generator.signal}`);
  const dir = join(root, 'native', 'session');
  const sources = readdirSync(dir).filter((name) => name.endsWith('.c')).sort().map((name) => join(dir, name));
  // This file too: a change of the flags above rebuilds it.
  const inputs = [...sources, ...readdirSync(dir).filter((name) => name.endsWith('.h')).map((name) => join(dir, name)), join(generated, 'wire.h'), fileURLToPath(import.meta.url)];
  const binary = join(root, 'build', 'Release', 'opencode-pty-session');
  const built = statSync(binary, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (inputs.every((path) => statSync(path).mtimeMs < built)) return;
  mkdirSync(dirname(binary), { recursive: true });
  execFileSync('cc', [...SESSION_HELPER_CFLAGS, `-I${generated}`, '-o', binary, ...sources, '-lutil'], { stdio: 'inherit' });
}

/** V8's code cache of each bundle, made by this Node (a start on another V8 ignores it and compiles). */
async function codeCaches(bundles) {
  const producer = join(root, 'build', 'produce-cache.cjs');
  // CommonJS as the bundles it caches; the config's door brings the addon's loader into its graph, which
  // finds the addon from import.meta.url, so that is defined here as in the root bundles.
  await build({
    ...common,
    entryPoints: [join(root, 'src/boot/produce-cache.ts')],
    outfile: producer,
    format: 'cjs',
    banner: { js: "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
    define: { 'import.meta.url': '__importMetaUrl' },
  });
  for (const bundle of bundles) {
    // No environment (produce-cache.ts): evaluating a bundle runs nothing, so a failure is the producer's own.
    const made = spawnSync(process.execPath, ['--predictable', producer, bundle], { env: {}, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (made.status !== 0 || !statSync(`${bundle}.cache`, { throwIfNoEntry: false })?.size) throw new Error(`no code cache for ${bundle}: ${made.stderr || `exit ${made.status ?? made.signal}`}`);
  }
  rmSync(producer);
}
