// The broker's entry (broker.cjs, the unit's ExecStart): its bundle, from the code cache beside it.
import { join } from 'node:path';
import { runBundle } from './code-cache.ts';

(runBundle(join(__dirname, 'broker-main.cjs'), module).exports as { run(): void }).run();
