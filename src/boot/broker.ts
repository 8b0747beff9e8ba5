// The broker's entry (broker.cjs, the unit's ExecStart): its bundle, from the code cache beside it.
// The first spare worker starts here, before that bundle loads: on a cold start the first session
// waited for it (a Node start of its own), and the two starts overlap on separate cores this way.
import { join } from 'node:path';
import { runBundle } from './code-cache.ts';
import { BUS_ADDRESS_ENV } from '../control/broker-worker.ts';
import { startWorker, workerEnvironment, type StartedWorker } from '../broker/worker-process.ts';

/** Only as root (the broker refuses to run otherwise); a failure here is the pool's to retry. */
function earlySpare(): StartedWorker | undefined {
  if (process.geteuid?.() !== 0) return undefined;
  try {
    return startWorker([join(__dirname, 'worker.cjs')], workerEnvironment(process.env, undefined, process.env[BUS_ADDRESS_ENV] || undefined));
  } catch {
    return undefined;
  }
}

const early = earlySpare();
(runBundle(join(__dirname, 'broker-main.cjs'), module).exports as { run(early?: StartedWorker): void }).run(early);
