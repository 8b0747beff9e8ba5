// A worker's entry (worker.cjs, started by the broker): its bundle, from the code cache beside it.
import { join } from 'node:path';
import { runBundle } from './code-cache.ts';

runBundle(join(__dirname, 'worker-main.cjs'), module);
