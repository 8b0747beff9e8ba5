// The broker's entry (broker.cjs, the unit's ExecStart): its bundle, from the code cache beside it.
// The first spare worker starts here, before that bundle loads: on a cold start the first session
// waited for it (a Node start of its own), and the two starts overlap on separate cores this way.
import { join } from 'node:path';
import { runBundle } from './code-cache.ts';
import { BUS_ADDRESS_ENV } from '../control/index.ts';
import { type StartedWorker, startWorker, workerEnvironment } from '../broker/index.ts';
import { native } from '../native/index.ts';

/** Only as root (the broker refuses to run otherwise); a failure is the broker's to log, the pool's to retry. */
function earlySpare(): StartedWorker | Error | undefined {
  if (process.geteuid?.() !== 0) return undefined;
  try {
    // systemd's descriptors (sd_listen_fds(3): from fd 3, not close-on-exec) stay ours: fd 3 is the
    // worker's control end in it, and a second one would be inherited as fd 4.
    if (Number(process.env.LISTEN_PID) === process.pid) {
      for (let fd = 3; fd < 3 + Math.min(Number(process.env.LISTEN_FDS) || 0, 64); fd += 1) native().setCloexec(fd);
    }
    return startWorker([join(__dirname, 'worker.cjs')], workerEnvironment(process.env, undefined, process.env[BUS_ADDRESS_ENV] || undefined));
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

const early = earlySpare();
(runBundle(join(__dirname, 'broker-main.cjs'), module).exports as { run(early?: StartedWorker | Error): void }).run(early);
