// A worker Session in unit tests: over a real socketpair, with a fake unit manager, START already sent.
import { closeSync, constants, fstatSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { testConfig } from '../support/config-fixture.ts';
import { native } from '../../src/native/binding.ts';
import { encodeFrame } from '../../src/protocol/index.ts';
import { HelperMessageType } from '../../src/control/helper-channel.ts';
import type { WorkerMessage } from '../../src/control/broker-worker.ts';
import type { Units } from '../../src/systemd/bus-session.ts';
import type { StartProgress, StartedSession } from '../../src/systemd/unit-manager.ts';
import type { SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { deferred, type Deferred } from '../support/deferred.ts';
import { Session, type SessionDeps } from '../../src/worker/session.ts';

export const sessionConfig = testConfig({ client: { user: 'agent', group: 'agent', uid: 1500, gid: 1500, service: null }, requireClientUnit: false });

/** A unit manager whose start is `startSession` and whose units never end by themselves. */
export function fakeUnits(startSession: Units['startSession']): Units {
  return {
    startSession,
    waitForExit: () => new Promise(() => undefined),
    kill: async () => undefined,
    stopAndWait: async () => undefined,
    listUnitsByPrefix: async () => [],
    serviceState: async () => {
      throw new Error('not used');
    },
    close: () => undefined,
  };
}

/** What the worker asked the unit manager for: PID 1's copies of the helper's end (its stderr: what the
 * helper writes on) and of the client's socket (its stdout), and the start's progress callbacks. */
export interface AskedStart {
  helperCopy: number;
  stdoutCopy: number;
  progress: StartProgress;
}

/** A unit manager whose start job the test settles (`job`), with `overrides` on fakeUnits(). */
export function scriptedStart(overrides: Partial<Units> = {}): { manager: Units; job: Deferred<StartedSession>; asked: Deferred<AskedStart> } {
  const job = deferred<StartedSession>();
  const asked = deferred<AskedStart>();
  const manager: Units = {
    ...fakeUnits((_name: string, spec: SessionUnitSpec, progress: StartProgress = {}) => {
      asked.resolve({ helperCopy: native().dupCloexec(spec.stderrFd!), stdoutCopy: native().dupCloexec(spec.stdoutFd), progress });
      return job.promise;
    }),
    ...overrides,
  };
  return { manager, job, asked };
}

/** Device and inode of an open descriptor, or undefined when the number is not open. */
export function identity(fd: number): string | undefined {
  try {
    const stat = fstatSync(fd, { bigint: true });
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

export interface SessionOptions {
  /** What is left of the handshake deadline (5 s by default). */
  deadlineMs?: number;
  /** False: the client sends no START. */
  start?: boolean;
  /** The worker's reports to the broker. */
  report?: (message: WorkerMessage) => void;
  /** The protocol version WELCOME named (1 by default). */
  version?: number;
  /** Each event the session's state machine takes. */
  onEvent?: SessionDeps['onEvent'];
  /** The worker's warm unit for the START (warm-unit.ts); none by default. */
  drawWarm?: SessionDeps['drawWarm'];
  /** The client unit the peer was admitted from (none by default): one this process is not in fails
   * the START's re-check of its peer. */
  peerCgroup?: string;
}

/**
 * Runs a Session for this process as its peer and sends START (with a fresh directory's fd) from the
 * client's end. `clientFd` is the client's socket; `cleanUp` removes the directory.
 */
export function runSession(manager: Units, options: SessionOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'session-fixture-'));
  const [clientFd, server] = native().socketpair();
  const serverIdentity = identity(server);
  const pidfd = native().pidfdOpen(process.pid);
  const session = new Session(server, pidfd, { pid: process.pid, uid: process.getuid!(), gid: process.getgid!(), cgroup: options.peerCgroup ?? null }, options.deadlineMs ?? 5000, {
    manager,
    config: sessionConfig,
    helperPath: '/nonexistent/opencode-pty-session',
    report: options.report ?? (() => undefined),
    log: () => undefined,
    version: options.version,
    onEvent: options.onEvent,
    drawWarm: options.drawWarm,
  });
  const ended = session.run();
  if (options.start === false) return { session, clientFd, ended, serverIdentity, dirIdentity: undefined, cleanUp: () => rmSync(dir, { recursive: true }) };
  const dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  const stat = fstatSync(dirFd, { bigint: true });
  const start = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['/bin/true'], env: [] });
  assert.is(native().sendmsg(clientFd, start, 0, start.length, [dirFd]), start.length);
  const dirIdentity = identity(dirFd);
  closeSync(dirFd);
  return { session, clientFd, ended, serverIdentity, dirIdentity, cleanUp: () => rmSync(dir, { recursive: true }) };
}

/**
 * What the real helper does at its start, by hand (native/session/control.c): reads ENV and GO from
 * its end of the control channel (both queued before the unit was asked for), sends PID, and writes
 * GO's STARTED on its stdout with the pids set as the session's protocol version lays them out.
 */
export function helperStarts(helperFd: number, stdoutFd: number, programPid: number, mainPid: number, version = 1): void {
  const buffer = Buffer.alloc(256 * 1024);
  const received = native().recvmsg(helperFd, buffer, 0, buffer.length, 0);
  assert.ok(received, 'ENV and GO are queued');
  const queued = buffer.subarray(0, received!.bytes);
  assert.is(queued[0], HelperMessageType.ENV);
  const goAt = 5 + queued.readUInt32BE(1);
  assert.is(queued[goAt], HelperMessageType.GO);
  const started = Buffer.from(queued.subarray(goAt + 5, goAt + 5 + queued.readUInt32BE(goAt + 1)));
  const pid = Buffer.from([HelperMessageType.PID, 0, 0, 0, 4, 0, 0, 0, 0]);
  pid.writeUInt32BE(programPid, 5);
  assert.is(native().sendmsg(helperFd, pid, 0, pid.length, []), pid.length);
  if (version >= 2) {
    started.writeUInt32BE(programPid, 5);
    started.writeUInt32BE(mainPid, 9);
  } else started.writeUInt32BE(mainPid, 5);
  assert.is(native().sendmsg(stdoutFd, started, 0, started.length, []), started.length);
}
