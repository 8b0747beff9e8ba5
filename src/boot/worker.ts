// A worker's entry (worker.cjs, started by the broker): its bundle, from the code cache beside it.
import { join } from 'node:path';
import { runBundle } from './code-cache.ts';

// Quiet: one spare starts per session, and its broker has said once whether the cache fits.
(runBundle(join(__dirname, 'worker-main.cjs'), module, true).exports as { run(): void }).run();
