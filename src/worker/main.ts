// Worker process: one session. Waits warm (bus connected) for the broker's hand-off on fd 3, runs the
// session to its end, reports, and exits.
import { native } from '../native/binding.ts';
import { FdSocket } from '../io/fd-socket.ts';
import type { Config } from '../config/schema.ts';
import { ErrorCode } from '../protocol/constants.ts';
import { UnitManager } from '../systemd/unit-manager.ts';
import { openBusSession } from '../systemd/bus-session.ts';
import { readControl, sendControl } from '../control/worker-end.ts';
import { helperPath } from './helper-path.ts';
import { Session } from './session.ts';
import { warmUp } from './warm-up.ts';
import { describeEnd } from './end-report.ts';
import { SessionError } from '../protocol/session-error.ts';
import { createLogger, sessionFields, type LogFields, type LogLevel } from '../log.ts';

/** The control socketpair end the broker hands every worker. */
export const CONTROL_FD = 3;
export const WORKER_CONFIG_ENV = 'OPENCODE_PTY_WORKER_CONFIG';
export const BUS_ADDRESS_ENV = 'OPENCODE_PTY_BUS_ADDRESS';

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

async function main(): Promise<number> {
  const config = JSON.parse(process.env[WORKER_CONFIG_ENV] ?? 'null') as Config | null;
  if (!config) throw new Error(`${WORKER_CONFIG_ENV} is not set: the worker is started by the broker`);
  native().setCloexec(CONTROL_FD);
  const control = new FdSocket(CONTROL_FD);
  control.on('error', () => undefined);
  // Its own bus connection, kept up across a bus restart: the session's unit is watched again on
  // the new connection (or the session ends with a clear ERROR if its exit was lost meanwhile).
  const manager = await openBusSession(
    (address, options) => UnitManager.connect(address, options),
    process.env[BUS_ADDRESS_ENV] || undefined,
    { timeoutMs: config.limits.operationTimeoutMs },
    (level, message) => log(message, undefined, level),
  );
  const warmFailed = warmUp(config, config.helperPath || helperPath());
  if (warmFailed) log(`warm-up failed (the first session compiles as it goes): ${warmFailed}`);
  sendControl(control, { type: 'ready' });
  const first = await readControl(control);
  if (first.message.type !== 'session') {
    control.close();
    manager.close();
    return 0;
  }
  const [clientFd, pidfd] = first.fds as [number, number];
  const { peer, deadlineMs } = first.message;
  const session = new Session(clientFd, pidfd, peer, deadlineMs, {
    manager,
    config,
    helperPath: config.helperPath || helperPath(),
    report: (message) => sendControl(control, message),
    // Every line about the session carries its unit and peer, so `journalctl SESSION_UNIT=…` finds them all.
    log: (message) => log(message, { ...sessionFields(session.unit), PEER_PID: peer.pid, PEER_UID: peer.uid }),
  });
  // Later messages: a shutdown, or the broker gone (EOF); either ends the session.
  const shutdown = () => session.end('shutdown', new SessionError(ErrorCode.SHUTDOWN, 'supervisor is shutting down'));
  // The broker gone mid-report (a reset) is the same as its EOF: end the session, stop its unit.
  control.on('error', shutdown);
  void (async () => {
    for (;;) {
      const next = await readControl(control);
      if (next.message.type === 'shutdown') shutdown();
    }
  })().catch(shutdown);
  let reason: string;
  try {
    reason = await session.run();
  } catch (error) {
    // Stopping the unit failed: the broker sees this report (or our exit) and stops the unit itself.
    log(`session ${session.unit ?? ''} could not be cleaned up: ${(error as Error).message}`, sessionFields(session.unit), 'error');
    sendControl(control, { type: 'ended', reason: 'cleanup-failed' });
    manager.close();
    await flushed(control);
    return 1;
  }
  sendControl(control, { type: 'ended', reason });
  log(`session ${session.unit ?? '(none)'} ended: ${session.ending ? describeEnd(session.ending) : reason}`, { ...sessionFields(session.unit), RESULT: reason });
  manager.close();
  await flushed(control);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    log(`fatal: ${(error as Error).message}`, undefined, 'error');
    process.exit(1);
  },
);
