// Build step, never shipped: `node produce-cache.cjs BUNDLE` evaluates the bundle once (and runs the
// worker's warm-up when the bundle exports it) and writes V8's cache of what that compiled to
// BUNDLE.cache (see code-cache.ts): a spare then starts and warms up with that code compiled
// (its warm-up 16 → 8 ms here). Evaluating a bundle runs no main: its entry calls the `run` it
// exports (src/boot/broker.ts, worker.ts), and the build runs as root. With an empty environment,
// so that nothing the warm-up reads can come from the build's.
// The same bytes from every build of one source (the manifest's promise): V8 is run with
// --predictable, which a start without it accepts, and the script is named by its base name alone,
// since the data holds that name: a copy, as a slice of the path would carry the whole path along
// (V8 keeps a substring's parent string).
import { readFileSync, writeFileSync } from 'node:fs';
import { type Config, DEFAULT_LIMITS, DEFAULT_SESSION } from '../config/index.ts';
import { basename } from 'node:path';
import { CACHE_SUFFIX, bundleScript, cacheFile, evaluate } from './code-cache.ts';

const SAMPLE_CONFIG: Config = {
  client: { user: 'agent', group: 'agent', uid: 1500, gid: 1500, service: 'agent.service' },
  requireClientUnit: true,
  socketPath: '/run/opencode-pty/supervisor.sock',
  socketGroup: 'opencode-pty',
  socketGid: 4240,
  unitPrefix: 'opencode-pty-',
  helperPath: '',
  limits: DEFAULT_LIMITS,
  session: DEFAULT_SESSION,
};

const path = process.argv[2];
if (!path || Object.keys(process.env).length > 0) throw new Error('usage: env -i node produce-cache.cjs BUNDLE');
const source = readFileSync(path);
const script = bundleScript(source, Buffer.from(basename(path)).toString('utf8'));
const exports = evaluate(script, path, module) as { warmUpForCodeCache?: (config: Config, helperPath: string) => string | undefined };
// The worker's warm-up, with a configuration of defaults: what it compiles is cached too.
const failed = exports.warmUpForCodeCache?.(SAMPLE_CONFIG, '/usr/lib/opencode-pty/opencode-pty-session');
if (failed) throw new Error(`the warm-up failed: ${failed}`);
writeFileSync(path + CACHE_SUFFIX, cacheFile(source, script.createCachedData()), { mode: 0o644 });
