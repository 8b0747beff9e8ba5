// What each connection's handshake uses of the broker (connection.ts's ConnectionDeps), put together
// from the broker's parts: the checks, the slots, the workers and where an adopted session goes.
import { type Config, stoppingSessionBoundMs } from '../config/index.ts';
import { type ClientService, pidfdCgroupNow } from '../identity/index.ts';
import type { Logger } from '../log.ts';
import { native } from '../native/index.ts';
import type { Admission } from './admission.ts';
import { mainPidOf, type ConnectionDeps } from './connection.ts';
import { mainPidLook } from './kept-request.ts';
import type { LiveSessions } from './live-sessions.ts';
import type { RefusalReporter } from './refusal-reporter.ts';
import { STOP_IN_FLIGHT_MS, type SessionSlots } from './session-slots.ts';
import { startOrigin } from './start-origin.ts';
import type { WorkerPool } from './worker-pool.ts';

export interface BrokerParts {
  config: Config;
  service: ClientService | undefined;
  admission: Admission;
  slots: SessionSlots;
  refusals: RefusalReporter;
  pool: WorkerPool;
  sessions: LiveSessions;
  log: Logger;
}

export function connectionDeps(parts: BrokerParts): ConnectionDeps {
  const { config, service, sessions } = parts;
  let nextId = 1;
  return {
    handshakeTimeoutMs: config.limits.handshakeTimeoutMs,
    slotWaitMs: stoppingSessionBoundMs(config),
    settleMs: STOP_IN_FLIGHT_MS,
    clientService: config.requireClientUnit ? service : undefined,
    cgroupOf: pidfdCgroupNow,
    admission: parts.admission,
    slots: parts.slots,
    mainPid: mainPidOf(service),
    refusals: parts.refusals,
    takeWorker: () => parts.pool.take(),
    adopt: (worker, slot, adopted) => sessions.adopt(worker, slot, adopted),
    nextId: () => nextId++,
    log: parts.log,
    startOrigin: (peer) => startOrigin(service, { pid: peer.credentials.pid, startTicks: peer.startTicks }, () => pidfdNames(peer.pidfd, peer.credentials.pid)),
    keptRequests: {
      clientUid: config.client.uid,
      isMainPid: mainPidLook(service),
      kept: { list: (scope) => sessions.kept.list(scope), find: (id, scope) => sessions.kept.reach(id, scope), takeEnded: (id, scope) => sessions.kept.takeEnded(id, scope) },
      service: config.client.service ?? undefined,
      log: parts.log,
    },
  };
}

/** Whether `pidfd` still names the live process `pid`. */
function pidfdNames(pidfd: number, pid: number): boolean {
  try {
    return native().pidfdPid(pidfd) === pid;
  } catch {
    return false;
  }
}
