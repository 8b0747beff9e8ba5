// Worker process: the wiring. Its config (from the environment, or the broker's first message), its
// own bus connection, a warm-up, then the Worker (worker.ts) serves sessions until the broker stops it.
import { readFileSync } from 'node:fs';
import { native } from '../native/index.ts';
import { FdSocket, isPeerGone } from '../io/index.ts';
import type { Config } from '../config/index.ts';
import { BROKER_UNIT, UnitManager, openBusSession } from '../systemd/index.ts';
import { readControl, BUS_ADDRESS_ENV, WORKER_CONFIG_ENV } from '../control/index.ts';
import { helperPath } from './helper-path.ts';
import { warmUp } from './warm-up.ts';
import { Worker } from './worker.ts';
import { KeptStore, supervisorCgroup } from '../kept-store/index.ts';
import { createLogger, type LogFields, type LogLevel } from '../log.ts';

/** The control socketpair end the broker hands every worker. */
export const CONTROL_FD = 3;

const logger = createLogger(`worker[${process.pid}]`);

/** The session's lines are info; fields (SESSION_UNIT, …) make them searchable in the journal. */
function log(message: string, fields?: LogFields, level: LogLevel = 'info'): void {
  logger(level, message, fields);
}

/** Reports are tiny, but the process must not exit while one still sits in our queue. */
function flushed(socket: FdSocket): Promise<void> {
  if (socket.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    socket.once('drain', resolve);
    socket.once('close', resolve);
  });
}

/**
 * The config from the environment, or, for the first spare (started by the broker's entry before it
 * had loaded the config), from the control channel's first message. Undefined: the broker went first.
 */
async function receiveConfig(control: FdSocket): Promise<{ config: Config; early: boolean } | undefined> {
  const inEnvironment = process.env[WORKER_CONFIG_ENV];
  if (inEnvironment) return { config: JSON.parse(inEnvironment) as Config, early: false };
  let first;
  try {
    first = await readControl(control);
  } catch (error) {
    if (isPeerGone(error)) return undefined;
    throw error;
  }
  if (first.message.type !== 'config') throw new Error(`the broker's first message was ${first.message.type}, not the config`);
  return { config: first.message.config, early: true };
}

/** Kept sessions outlive this worker only when it runs in the broker's unit: their helpers take the next
 * channel from that cgroup alone (kept-store/supervisor-cgroup.ts). Elsewhere they end with it, as said. */
function keptDeps(): { keptStore?: KeptStore; rendezvousCgroup?: string } {
  let text = '';
  try {
    text = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {}
  const found = supervisorCgroup(text, BROKER_UNIT);
  if ('why' in found) {
    log(`kept sessions end with this worker: ${found.why}`, undefined, 'warning');
    return {};
  }
  const removeFailed = (name: string, why: string) => log(`the kept store's ${name} is left: ${why}`, undefined, 'warning');
  return { keptStore: new KeptStore(undefined, removeFailed), rendezvousCgroup: found.cgroup };
}

async function main(): Promise<number> {
  // First, as the broker does (an exec made this process dumpable again): no uid-0 process without
  // CAP_SYS_PTRACE may ptrace the worker, or take its fds through /proc, and act as the supervisor.
  native().setNonDumpable();
  native().setCloexec(CONTROL_FD);
  const control = new FdSocket(CONTROL_FD);
  const received = await receiveConfig(control);
  // A broker that failed to start (its journal says why) closes the channel before sending it.
  if (!received) return 0;
  const { config, early } = received;
  // Looked up once, before anything else: a missing helper ends this worker before it says ready
  // (the broker then answers INTERNAL "no worker"), never with a client already handed over.
  const kept = keptDeps();
  const worker = new Worker({ control, config, helperPath: config.helperPath || helperPath(), ...kept, skipFirstWarm: early, log });
  // The broker may go while this process still boots (it stopped, or gave up on a slow spare): the end
  // is seen once the worker reads, and it exits with a line saying so.
  const controlLost = (error: Error) => {
    if (!worker.closing) log(`the broker's control channel ended (${error.message}): the worker ends`);
    worker.shutdown();
  };
  control.on('error', controlLost);
  // Its own bus connection, kept up across a bus restart: the session's unit is watched again on
  // the new connection (or the session ends with a clear ERROR if its exit was lost meanwhile).
  const manager = await openBusSession(
    (address, options) => UnitManager.connect(address, options),
    process.env[BUS_ADDRESS_ENV] || undefined,
    { timeoutMs: config.limits.operationTimeoutMs },
    (level, message) => log(message, undefined, level),
  );
  // The first spare skips its warm-up: socket activation started the broker for a client that now
  // waits for this very worker, and what the warm-up would compile is in the code cache already
  // (produce-cache.ts runs it); skipping it made the bench's cold start about 15 ms faster (medians of
  // alternated runs). Later spares start while a session runs and warm up before anyone waits for them.
  const warmFailed = early ? undefined : warmUp(config, worker.helperPath);
  if (warmFailed) log(`warm-up failed (the first session compiles as it goes): ${warmFailed}`);
  const code = await worker.serve(manager, controlLost);
  if (code !== 0) {
    manager.close();
    await flushed(control);
    return code;
  }
  control.close();
  manager.close();
  return 0;
}

/** Runs the worker and exits with its code. Called by its entries (src/boot/worker.ts; entry.ts from
 * source), never by evaluating the bundle: the build evaluates it, as root, to make its code cache. */
export function run(): void {
  main().then(
    (code) => process.exit(code),
    (error) => {
      log(`fatal: ${(error as Error).message}`, undefined, 'error');
      process.exit(1);
    },
  );
}

/** For the build's code cache alone (src/boot/produce-cache.ts): the pure part of a start, run once
 * there, so the code it compiles is in the cache and a spare's own warm-up finds it compiled. */
export { warmUp as warmUpForCodeCache };
