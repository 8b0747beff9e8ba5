// Runs a CommonJS bundle from V8's code cache when one sits beside it, so a Node start (broker, each
// spare worker) deserializes the bundle's compiled code instead of compiling it again. Node 20 has
// no compile cache of its own (module.enableCompileCache came in 22.1); `vm.Script` takes V8's
// `cachedData`, and V8 rejects data made by another V8 version or with other flags
// (`cachedDataRejected`), which then compiles as usual.
//
// The cache is code: whoever can write it runs code as root. It is made once by the build
// (src/boot/produce-cache.ts, run by build.mjs), ships beside the bundle under the manifest's sha256 like every artifact,
// and is never written at run time. V8 checks only the source's length, so the cache opens with the
// sha256 of the source it was made from, and a cache for other source is ignored.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname } from 'node:path';
import { Script } from 'node:vm';

export const CACHE_SUFFIX = '.cache';
const DIGEST_BYTES = 32;

// Node's own CommonJS wrapper (Module.wrap), so the bundle sees what `node bundle.cjs` would give it.
const WRAP_HEAD = '(function (exports, require, module, __filename, __dirname) { ';
const WRAP_TAIL = '\n});';

export interface Compiled {
  script: Script;
  /** `used`, or why the bundle was compiled from source instead. */
  cache: 'used' | 'absent' | 'other-source' | 'rejected';
  /** What the bundle exports: evaluating it runs nothing, its entry calls `run`. */
  exports: unknown;
}

function digest(source: Buffer): Buffer {
  return createHash('sha256').update(source).digest();
}

/** The cache's bytes for `source`, if `cache` was made from exactly that source. */
export function cachedDataFor(source: Buffer, cache: Buffer | undefined): Buffer | undefined {
  if (!cache || cache.length <= DIGEST_BYTES) return undefined;
  return cache.subarray(0, DIGEST_BYTES).equals(digest(source)) ? cache.subarray(DIGEST_BYTES) : undefined;
}

/** What the build writes: the source's digest, then V8's data. */
export function cacheFile(source: Buffer, data: Buffer): Buffer {
  return Buffer.concat([digest(source), data]);
}

function readOptional(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The bundle as one classic script; `filename` names it in stack traces (V8 accepts a cache made under another name). */
export function bundleScript(source: Buffer, filename: string, cachedData?: Buffer): Script {
  return new Script(WRAP_HEAD + source.toString('utf8') + WRAP_TAIL, { filename, cachedData });
}

/** Runs the script's function as Node runs a CommonJS module's; its module.exports. */
export function evaluate(script: Script, path: string, parent: NodeJS.Module | undefined): unknown {
  const run = script.runInThisContext() as (...args: unknown[]) => void;
  const exports = {};
  const module = { exports, id: path, filename: path, parent, loaded: false, children: [] };
  run.call(exports, exports, createRequire(path), module, path, dirname(path));
  return module.exports;
}

/** Evaluates the bundle at `path` as `node path` would, from its cache when one fits; `quiet`: a
 * cache not used goes unsaid (a worker: its broker, from the same directory, has said it). */
export function runBundle(path: string, parent: NodeJS.Module | undefined, quiet = false): Compiled {
  const source = readFileSync(path);
  const file = readOptional(path + CACHE_SUFFIX);
  const cachedData = cachedDataFor(source, file);
  const script = bundleScript(source, path, cachedData);
  const cache = !file ? 'absent' : !cachedData ? 'other-source' : script.cachedDataRejected === true ? 'rejected' : 'used';
  // Said once per start, before the bundle runs: every start now compiles (a Node other than the build's).
  if (!quiet && (cache === 'other-source' || cache === 'rejected')) process.stderr.write(`<5>${basename(path)}: code cache not used (${cache === 'rejected' ? 'made by another Node' : 'made from other source'}); the bundle is compiled at each start\n`);
  return { script, cache, exports: evaluate(script, path, parent) };
}
