// The code cache: a bundle runs from the cache made from its own source, never from one made from
// other source; the build's caches fit this Node and are the same from any directory.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleScript, cacheFile, cachedDataFor, CACHE_SUFFIX, runBundle } from '../../src/boot/code-cache.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const scratchRoot = join(root, '.sandbox');
mkdirSync(scratchRoot, { recursive: true });
const scratch = mkdtempSync(join(scratchRoot, 'code-cache-'));

/** A bundle that records what it ran with on globalThis. */
function bundle(name: string, value: string): string {
  const path = join(scratch, name);
  writeFileSync(path, `globalThis.ran = { value: ${JSON.stringify(value)}, file: __filename, dir: __dirname, strict: (function () { return this === undefined; })(), os: typeof require('node:os').cpus };\n`);
  return path;
}

function cacheOf(source: Buffer): Buffer {
  const script = bundleScript(source, 'x.cjs');
  script.runInThisContext();
  return cacheFile(source, script.createCachedData());
}

const ran = () => (globalThis as { ran?: Record<string, unknown> }).ran;

test('evaluating a built bundle (as the build does, as root, for its cache) runs nothing: its entry calls the run it exports', () => {
  const child = fileURLToPath(new URL('./evaluate-child.ts', import.meta.url));
  for (const name of ['broker-main.cjs', 'worker-main.cjs', 'cli-main.cjs']) {
    const run = spawnSync('env', ['-i', process.execPath, '--import', 'tsx', child, join(root, 'dist', name)], { encoding: 'utf8', cwd: root, timeout: 20_000 });
    // Before: the bundle ran its main, which failed (exit status 1, its error on stderr).
    assert.equal([run.status, run.stdout.trim(), run.stderr], [0, 'function', ''], name);
  }
});

test('a bundle with no cache is compiled and runs as node would run it', () => {
  const path = bundle('plain.cjs', 'plain');
  const compiled = runBundle(path, undefined);
  assert.is(compiled.cache, 'absent');
  assert.equal(ran(), { value: 'plain', file: path, dir: scratch, strict: false, os: 'function' });
});

test('a bundle runs from the cache made from its own source', () => {
  const path = bundle('cached.cjs', 'cached');
  writeFileSync(path + CACHE_SUFFIX, cacheOf(readFileSync(path)));
  const compiled = runBundle(path, undefined);
  assert.is(compiled.cache, 'used');
  assert.is(ran()?.value, 'cached');
});

test('a cache made from other source of the same length is ignored (V8 checks only the length)', () => {
  const path = bundle('swapped.cjs', 'AAAA');
  const other = Buffer.from(readFileSync(path, 'utf8').replace('AAAA', 'BBBB'));
  assert.is(other.length, readFileSync(path).length);
  writeFileSync(path + CACHE_SUFFIX, cacheOf(other));
  assert.is(cachedDataFor(readFileSync(path), readFileSync(path + CACHE_SUFFIX)), undefined);
  const compiled = runBundle(path, undefined);
  assert.is(compiled.cache, 'other-source');
  assert.is(ran()?.value, 'AAAA');
});

test('a cache not used is said once on stderr (the journal), not by a quiet entry (a worker)', () => {
  const path = bundle('unused.cjs', 'CCCC');
  writeFileSync(path + CACHE_SUFFIX, cacheOf(Buffer.from(readFileSync(path, 'utf8').replace('CCCC', 'DDDD'))));
  const said: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => said.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    runBundle(path, undefined, true);
    assert.equal(said, []);
    runBundle(path, undefined);
  } finally {
    process.stderr.write = write;
  }
  assert.equal(said, ['<5>unused.cjs: code cache not used (made from other source); the bundle is compiled at each start\n']);
});

test('a cut or empty cache is ignored', () => {
  const source = Buffer.from('1');
  assert.is(cachedDataFor(source, Buffer.alloc(0)), undefined);
  assert.is(cachedDataFor(source, cacheOf(source).subarray(0, 32)), undefined);
  assert.ok(cachedDataFor(source, cacheOf(source)));
});

for (const name of ['broker-main.cjs', 'worker-main.cjs', 'cli-main.cjs']) {
  test(`the build's ${name} cache fits this Node`, () => {
    const path = join(root, 'dist', name);
    const cache = cachedDataFor(readFileSync(path), readFileSync(path + CACHE_SUFFIX));
    assert.ok(cache, 'made from this source');
    const script = bundleScript(readFileSync(path), path, cache);
    assert.is(script.cachedDataRejected, false);
  });
}

test('the cache of one bundle is the same bytes from any directory (the manifest hashes it)', () => {
  const made = ['a', 'other-dir'].map((dir) => {
    const here = join(scratch, dir);
    mkdirSync(here);
    for (const name of ['worker-main.cjs', `${process.platform}-${process.arch}/opencode_pty.node`]) copyFileSync(join(root, 'dist', name), join(here, basename(name)));
    spawnSync(process.execPath, ['--predictable', '--import', 'tsx', join(root, 'src/boot/produce-cache.ts'), join(here, 'worker-main.cjs')], { env: {}, cwd: root, encoding: 'utf8' });
    return readFileSync(join(here, `worker-main.cjs${CACHE_SUFFIX}`));
  });
  assert.ok(made[0]!.equals(made[1]!));
});

test("the build's worker cache is made after the worker's warm-up has run (its code compiled): a failed warm-up fails it", () => {
  const here = join(scratch, 'warm');
  mkdirSync(here);
  const produce = (body: string) => {
    const path = join(here, 'bundle.cjs');
    writeFileSync(path, `exports.warmUpForCodeCache = (config, helper) => { ${body} };\n`);
    rmSync(path + CACHE_SUFFIX, { force: true });
    const run = spawnSync(process.execPath, ['--predictable', '--import', 'tsx', join(root, 'src/boot/produce-cache.ts'), path], { env: {}, cwd: root, encoding: 'utf8' });
    return { run, made: existsSync(path + CACHE_SUFFIX) };
  };
  const ran = produce(`require('node:fs').writeFileSync(__dirname + '/ran', config.unitPrefix + ' ' + helper); return undefined;`);
  assert.ok(ran.made, ran.run.stderr);
  assert.is(readFileSync(join(here, 'ran'), 'utf8'), 'opencode-pty- /usr/lib/opencode-pty/opencode-pty-session');
  const failed = produce(`return 'no codec';`);
  assert.not.ok(failed.made);
  assert.match(failed.run.stderr, 'the warm-up failed: no codec');
});

test.after(() => rmSync(scratch, { recursive: true }));

test.run();
