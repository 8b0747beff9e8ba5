// The broker's door, for the boot entry and the bench: starting a worker process and the spare's idle time.
export { IDLE_SPARE_MS } from './worker-pool.ts';
export { startWorker, workerEnvironment, type StartedWorker } from './worker-process.ts';
