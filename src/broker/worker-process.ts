// Starting a worker process: its environment and its control socketpair. Kept apart from the pool
// so the broker's entry can start the first spare before the broker's own bundle has loaded: on a
// cold start the first session waited for that spare (traced: ready ~50 ms after WELCOME).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync } from 'node:fs';
import type { Config } from '../config/index.ts';
import { native } from '../native/index.ts';
import { BUS_ADDRESS_ENV, WORKER_CONFIG_ENV } from '../control/index.ts';

/**
 * The environment a worker gets: nothing systemd meant for the broker alone. Without `config` the
 * worker waits for a `config` message on its control channel before anything else.
 */
export function workerEnvironment(env: NodeJS.ProcessEnv, config: Config | undefined, busAddress: string | undefined): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (/^(LISTEN_|NOTIFY_SOCKET$|WATCHDOG_)/.test(name)) continue;
    clean[name] = value;
  }
  delete clean[WORKER_CONFIG_ENV];
  if (config) clean[WORKER_CONFIG_ENV] = JSON.stringify(config);
  if (busAddress) clean[BUS_ADDRESS_ENV] = busAddress;
  else delete clean[BUS_ADDRESS_ENV];
  return clean;
}

/** A worker process just started: our end of its control socketpair (fd 3 in it) and how it ended. */
export interface StartedWorker {
  child: ChildProcess;
  control: number;
  /** Resolves when the process exits or could not start, with why (and the spawn's error, if any). */
  gone: Promise<{ why: string; error?: Error }>;
}

/** `output`: where its stdout and stderr go (the journal, through ours; tests read them). */
export function startWorker(command: string[], env: NodeJS.ProcessEnv, output: 'inherit' | 'pipe' = 'inherit'): StartedWorker {
  const [ours, theirs] = native().socketpair();
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, command, { stdio: ['ignore', output, output, theirs], env });
  } catch (error) {
    closeSync(ours);
    throw error;
  } finally {
    closeSync(theirs);
  }
  // Listened to at once: a failed spawn (EAGAIN, EMFILE…) emits only 'error', on a later turn,
  // perhaps before anyone has taken this worker over; unheard, that 'error' would end the broker.
  const gone = new Promise<{ why: string; error?: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ why: `exited (${signal ?? code})` }));
    child.once('error', (error) => resolve({ why: `could not start: ${error.message}`, error }));
  });
  return { child, control: ours, gone };
}

/**
 * Signals a worker only while it is one: a spawn that failed (EAGAIN, EMFILE…) has no pid until its
 * 'error' comes, and ChildProcess.kill() would then pass whatever its pid field holds to kill(2)
 * (0: our own process group).
 */
export function signalWorker(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
}
