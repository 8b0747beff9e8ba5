// The command's entry (cli.js, the package's bin): its bundle, from the code cache beside it, as the
// root side starts. CommonJS (dist/package.json says so): a Node start that runs an ES module first
// sets up the ES module loader, 6 to 12 ms of each `opencode-ptyctl run` here. Quiet: a cache that
// does not fit (another Node) only costs time, and stderr is the session's.
import { join } from 'node:path';
import { runBundle } from './code-cache.ts';

(runBundle(join(__dirname, 'cli-main.cjs'), module, true).exports as { run(): void }).run();
