// Run by code-cache.test.ts: evaluates a built root bundle as the build's cache step does, in an empty
// environment and with geteuid() answering non-root, so a main that did run would fail at once
// (the broker refuses a non-root start; a worker has no configuration) rather than start anything.
// Prints the type of the bundle's `run` export; the exit status tells whether anything ran after.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { bundleScript, evaluate } from '../../src/boot/code-cache.ts';

process.geteuid = () => 65534;
const path = process.argv[2]!;
const exports = evaluate(bundleScript(readFileSync(path), basename(path)), path, undefined) as { run?: unknown };
process.stdout.write(`${typeof exports.run}\n`);
