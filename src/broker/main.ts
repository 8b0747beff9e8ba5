// Broker process: configuration, the listening socket, the bus, signals; the Broker does the rest.
import { ErrorCode } from '../protocol/index.ts';
import { refuseQueued } from './refuse.ts';
import { checkSessionProperty, loadConfig } from '../config/index.ts';
import { createLogger } from '../log.ts';
import { type BusSession, notify, openBusSession, UnitManager, watchdogIntervalMs } from '../systemd/index.ts';
import { Broker } from './broker.ts';
import { checkSocketPermissions, createListener, takeSystemdListener, type Listener } from './listener.ts';
import { WorkerPool, workerCommand } from './worker-pool.ts';
import { signalWorker, workerEnvironment, type StartedWorker } from './worker-process.ts';
import { BUS_ADDRESS_ENV } from '../control/index.ts';
import { native } from '../native/index.ts';
import { StartupPhases } from './startup-phases.ts';

const log = createLogger('broker');

/** The exit status of a broker that could not start (sysexits' EX_CONFIG): its unit does not restart
 * on it (RestartPreventExitStatus=), as it restarts after a crash; the next connection tries again. */
export const START_FAILED_STATUS = 78;

/** sd_notify never blocks (the addon sends with MSG_DONTWAIT): when systemd's queue is full, a
 * status line is dropped rather than stalling or failing a connection. */
function notifyBestEffort(state: string): void {
  try {
    notify(state);
  } catch (error) {
    log('debug', `sd_notify dropped ${state.split('=')[0]}: ${(error as Error).message}`);
  }
}

/** Everything up to serving; any failure here leaves the broker unable to serve. */
async function start(systemdListener: Listener | undefined, early: StartedWorker | undefined, phases: StartupPhases): Promise<Broker> {
  const config = loadConfig({ checkProperty: checkSessionProperty });
  phases.mark('config');
  const listener = systemdListener ?? createListener(config.socketPath, config.socketGid);
  checkSocketPermissions(listener, config);
  const busAddress = process.env[BUS_ADDRESS_ENV] || undefined;
  // The first spare boots while we connect to the bus and clean up: the first client waits for both.
  // Started by the entry (early) it has booted since before our bundle loaded; it gets the config now.
  const pool = WorkerPool.of(workerCommand(), workerEnvironment(process.env, config, busAddress), log, early && { worker: early, config });
  pool.warm();
  let manager: BusSession;
  try {
    // Kept up across a bus restart; after each reconnection the broker looks for units it lost track of.
    manager = await openBusSession((address, options) => UnitManager.connect(address, options), busAddress, { timeoutMs: config.limits.operationTimeoutMs }, log);
  } catch (error) {
    pool.stop();
    throw new Error(`cannot reach systemd over D-Bus: ${(error as Error).message}`, { cause: error });
  }
  phases.mark('bus');
  const broker = new Broker({ config, listener, manager, pool, log, notify: notifyBestEffort });
  try {
    await broker.start();
  } catch (error) {
    pool.stop();
    manager.close();
    throw new Error(`startup orphan cleanup: ${(error as Error).message}`, { cause: error });
  }
  phases.mark('orphan scan');
  log('info', phases.line());
  manager.onReconnect(() => void broker.recheckUnits());
  void broker.done.finally(() => manager.close());
  return broker;
}

async function main(early: StartedWorker | undefined): Promise<number> {
  const phases = new StartupPhases();
  phases.mark('node and bundle');
  if (process.geteuid?.() !== 0) throw new Error('supervisor must run as root');
  // First: a uid-0 process without CAP_SYS_PTRACE could otherwise ptrace the broker, or take its fds
  // through /proc, and act as it (docs/security.md "Kept sessions across the supervisor").
  native().setNonDumpable();
  const systemdListener = takeSystemdListener();
  let broker: Broker;
  try {
    broker = await start(systemdListener, early, phases);
  } catch (error) {
    // The first spare, if nobody took it over, waits for a config that will not come.
    if (early) signalWorker(early.child, 'SIGKILL');
    notifyBestEffort(`STATUS=${(error as Error).message}`);
    // Answer what is queued, or systemd would start us again for it at once, fail after fail.
    if (systemdListener) refuseQueued(systemdListener.fd, ErrorCode.INTERNAL, 'supervisor cannot start; see its journal');
    throw error;
  }
  process.on('SIGTERM', () => broker.shutdown());
  process.on('SIGINT', () => broker.shutdown());
  const watchdogMs = watchdogIntervalMs();
  const watchdog = watchdogMs ? setInterval(() => notifyBestEffort('WATCHDOG=1'), watchdogMs / 2) : undefined;
  const code = await broker.done;
  clearInterval(watchdog);
  return code;
}

/** Runs the broker and exits with its code. Called by its entry (src/boot/broker.ts), never by
 * evaluating the bundle: the build evaluates it, as root, to make its code cache (produce-cache.ts).
 * `early`: the first spare, started by the entry (a broker that fails to start leaves it to end at
 * its channel's EOF). */
export function run(early?: StartedWorker | Error): void {
  // The entry could not start it: the pool starts the first spare itself, as from a checkout.
  if (early instanceof Error) log('warning', `the first spare worker could not be started early: ${early.message}`);
  main(early instanceof Error ? undefined : early).then(
    (code) => process.exit(code),
    (error: Error) => {
      log('error', error.message);
      process.exit(START_FAILED_STATUS);
    },
  );
}
