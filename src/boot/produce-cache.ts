// Build step, never shipped: `node produce-cache.cjs BUNDLE` evaluates the bundle once and writes
// V8's cache of what that compiled to BUNDLE.cache (see code-cache.ts). The bundle's main must do
// nothing here: the build runs this with an empty environment (a worker without its config fails
// first thing) and with geteuid() answering non-root (the broker refuses before any other step).
// The same bytes from every build of one source (the manifest's promise): V8 is run with
// --predictable, which a start without it accepts, and the script is named by its base name alone,
// since the data holds that name: a copy, as a slice of the path would carry the whole path along
// (V8 keeps a substring's parent string).
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { CACHE_SUFFIX, bundleScript, cacheFile, evaluate } from './code-cache.ts';

const path = process.argv[2];
if (!path || Object.keys(process.env).length > 0) throw new Error('usage: env -i node produce-cache.cjs BUNDLE');
process.geteuid = () => 65534;
const source = readFileSync(path);
const script = bundleScript(source, Buffer.from(basename(path)).toString('utf8'));
evaluate(script, path, module);
// Written at once, before the bundle's failing main() ends the process.
writeFileSync(path + CACHE_SUFFIX, cacheFile(source, script.createCachedData()), { mode: 0o644 });
