// Worker process: one session at a time. Waits warm (bus connected) for the broker's hand-off on
// fd 3, runs the session to its end, reports, and waits for the next one or exits.
import { native } from '../native/binding.ts';
import { FdSocket } from '../io/fd-socket.ts';
import { deferredDrains } from '../io/peer-close.ts';
import { closeAll } from '../io/fds.ts';
import type { Config } from '../config/schema.ts';
import { ErrorCode, LATEST_VERSION, PROTOCOL_VERSION } from '../protocol/constants.ts';
import { UnitManager } from '../systemd/unit-manager.ts';
import { openBusSession } from '../systemd/bus-session.ts';
import { readControl, sendControl } from '../control/worker-end.ts';
import { BUS_ADDRESS_ENV, WORKER_CONFIG_ENV } from '../control/broker-worker.ts';
import { helperPath } from './helper-path.ts';
import { Session } from './session.ts';
import { warmUp } from './warm-up.ts';
import { describeEnd } from './end-report.ts';
import { SessionError } from '../protocol/session-error.ts';
import { createLogger, sessionFields, type LogFields, type LogLevel } from '../log.ts';

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
    if (isEnd(error)) return undefined;
    throw error;
  }
  if (first.message.type !== 'config') throw new Error(`the broker's first message was ${first.message.type}, not the config`);
  return { config: first.message.config, early: true };
}

function isEnd(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'EOF' || code === 'CLOSED' || code === 'PEER_GONE';
}

/**
 * A worker serves one session at a time, and after a clean end (its unit gone, its fds closed) it
 * may serve the next: a Node start costs more CPU than a whole short session (FACTS.md), so a
 * worker per start made starts in a row wait for the next spare to boot. Bounded by
 * `limits.sessionsPerWorker`, so nothing a session leaves behind in this process can pile up for long.
 */

type Received = Awaited<ReturnType<typeof readControl>>;

async function main(): Promise<number> {
  native().setCloexec(CONTROL_FD);
  const control = new FdSocket(CONTROL_FD);
  const received = await receiveConfig(control);
  // A broker that failed to start (its journal says why) closes the channel before sending it.
  if (!received) return 0;
  const { config, early } = received;
  // Looked up once, before anything else: a missing helper ends this worker before it says ready
  // (the broker then answers INTERNAL "no worker"), never with a client already handed over.
  const helper = config.helperPath || helperPath();
  // The broker may go while this process still boots (it stopped, or gave up on a slow spare): the end
  // is seen once the reader below runs, and the worker exits with a line saying so.
  let closing = false;
  let shutdown = (): void => void (closing = true);
  const controlLost = (error: Error) => {
    if (!closing) log(`the broker's control channel ended (${error.message}): the worker ends`);
    shutdown();
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
  // (produce-cache.ts runs it). Cold start, `--only cold` n=10, four alternated pairs: 265, 282,
  // 275, 288 → 259, 242, 274, 278 ms. Later spares start while a session runs and warm up before
  // anyone waits for them.
  const warmFailed = early ? undefined : warmUp(config, helper);
  if (warmFailed) log(`warm-up failed (the first session compiles as it goes): ${warmFailed}`);
  // One reader for the whole life of the process: a session message while idle starts a session;
  // a shutdown, the broker gone (EOF) or a reset ends the running one, or the process when idle.
  let session: Session | undefined;
  let nextSession: (received: Received | undefined) => void = () => undefined;
  shutdown = () => {
    closing = true;
    if (session) session.end('shutdown', new SessionError(ErrorCode.SHUTDOWN, 'supervisor is shutting down'));
    else nextSession(undefined);
  };
  void (async () => {
    for (;;) {
      const next = await readControl(control);
      if (next.message.type === 'shutdown') shutdown();
      else if (next.message.type !== 'session') {
        // The config comes first or never (receiveConfig); anything else here is the broker's bug.
        closeAll(next.fds);
        log(`an unexpected ${next.message.type} message on the control channel; ignored`, undefined, 'error');
      } else if (session || closing) {
        // A session while one runs is the broker's bug; refuse it without touching the running one.
        closeAll(next.fds);
        log('a session was handed over while another runs; closing it', undefined, 'error');
      } else nextSession(next);
    }
  })().catch(controlLost);
  for (let served = 0; ; ) {
    const received = await new Promise<Received | undefined>((resolve) => {
      nextSession = resolve;
      if (closing) return resolve(undefined);
      sendControl(control, { type: 'ready' });
    });
    nextSession = () => undefined;
    if (!received || received.message.type !== 'session') break;
    const ran = await runSession(received, control, manager, config, helper, (running) => (session = running));
    session = undefined;
    served += 1;
    // Reusable only after a clean end: the unit is gone, every fd of the session closed.
    // A peer's descriptor still closing on a thread of its own (a FUSE FLUSH never answered) may hold
    // this process for good: it ends, and its slot stays taken until it has (broker.ts #adopt).
    // Nor after a helper that broke its control channel: nothing it sent is known to be harmless to the
    // next session of this process, and a fresh worker costs one start.
    const reusable = ran.clean && !ran.helperFailed && native().pendingCloses() === 0 && deferredDrains() === 0 && !closing && served < config.limits.sessionsPerWorker && received.message.reuse === true;
    sendControl(control, { type: 'ended', reason: ran.reason, reusable });
    if (!ran.clean) {
      manager.close();
      await flushed(control);
      return 1;
    }
    if (!reusable) break;
  }
  control.close();
  manager.close();
  return 0;
}

/** Runs one handed-over session to its end; `clean` when its unit is gone and nothing of it is left. */
async function runSession(
  received: Received,
  control: FdSocket,
  manager: Awaited<ReturnType<typeof openBusSession>>,
  config: Config,
  helper: string,
  running: (session: Session) => void,
): Promise<{ reason: string; clean: boolean; helperFailed: boolean }> {
  const [clientFd, pidfd] = received.fds as [number, number];
  const { peer, deadlineMs, version = PROTOCOL_VERSION } = received.message as Extract<Received['message'], { type: 'session' }>;
  if (!Number.isInteger(version) || version < PROTOCOL_VERSION || version > LATEST_VERSION) throw new Error(`the broker chose protocol version ${version}, which this worker does not speak`);
  const session: Session = new Session(clientFd, pidfd, peer, deadlineMs, {
    manager,
    config,
    helperPath: helper,
    version,
    report: (message) => sendControl(control, message),
    // Every line about the session carries its unit and peer, so `journalctl SESSION_UNIT=…` finds them all.
    log: (message) => log(message, { ...sessionFields(session.unit), PEER_PID: peer.pid, PEER_UID: peer.uid }),
  });
  running(session);
  try {
    const reason = await session.run();
    log(`session ${session.unit ?? '(none)'} ended: ${session.ending ? describeEnd(session.ending) : reason}`, { ...sessionFields(session.unit), RESULT: reason });
    return { reason, clean: true, helperFailed: session.helperFailed };
  } catch (error) {
    // Stopping the unit failed: the broker sees this report (or our exit) and stops the unit itself.
    log(`session ${session.unit ?? ''} could not be cleaned up: ${(error as Error).message}`, sessionFields(session.unit), 'error');
    return { reason: 'cleanup-failed', clean: false, helperFailed: session.helperFailed };
  }
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
