// A session's start, from START to the helper naming its program: read START frame-exact within the
// handshake deadline, re-check the peer, ask for the unit with ENV and GO (STARTED) queued, and wait for
// systemd's fork and the helper's PID. Every wait is raced against the session's abort.
import { randomBytes } from 'node:crypto';
import { unitStopWaitMs } from '../config/index.ts';
import { readlinkSync } from 'node:fs';
import { native } from '../native/index.ts';
import type { KeptStore } from '../kept-store/index.ts';
import { type FdSocket, closeQuietly, passRights } from '../io/index.ts';
import { ErrorCode, encodeFrame, type FrameOf, SessionError } from '../protocol/index.ts';
import { checkHelperOptions, unitNameFor, programLabel, sessionIdOf } from '../systemd/index.ts';
import type { PeerIdentity } from '../control/index.ts';
import { recheckPeer } from '../identity/index.ts';
import { openHelperLink, type HelperLink, type HelperLinkEvents } from './helper-link.ts';
import { unsafeHelper } from './helper-path.ts';
import { receiveStart } from './receive-start.ts';
import { raceAbort, settled } from './start-errors.ts';
import { startedTemplate, type ProgramPid } from './program-pid.ts';
import { planStart } from './start-plan.ts';
import { keepHelperArgs, keepPlanFor, type KeepPlan } from './keep-plan.ts';
import type { SessionRecord } from './session-record.ts';
import type { SessionDeps } from './session-deps.ts';
import type { UnitStop } from './unit-stop.ts';
import { startUnit, unlessJobFails } from './unit-start.ts';
import { launchWarm } from './warm-start.ts';
import { sandboxFitsWarm } from './warm-plan.ts';
import { resolveSandbox, type SessionSandbox } from './sandbox-request.ts';
import { needsConfirming, readUnitFacts, unconfirmed } from './guarantees.ts';
import type { UnitManager } from '../systemd/index.ts';
import { checkWorkspace } from './workspace-look.ts';
import { workspaceMounts } from './workspace-plan.ts';
import { protectGit } from './git-look.ts';

export interface StartContext {
  client: FdSocket;
  pidfd: number;
  peer: PeerIdentity;
  deps: SessionDeps;
  version: number;
  units: UnitStop;
  programPid: ProgramPid;
  record: SessionRecord;
  /** Settles once the session no longer waits for its start (the error, if the abort has one). */
  aborted: Promise<SessionError | undefined>;
  /** What is left until START must be in; `deadline` is called then. */
  deadlineMs: number;
  deadline(): void;
  helperEvents: HelperLinkEvents;
  /** The unit is about to be asked for: from the helper's fork on, it may hold the client's write side. */
  launched(link: HelperLink): void;
  /** Resolves once the unit is inactive or gone. */
  unitDone: Promise<unknown>;
  /** A stop of ours has begun (a late job failure is then ours, not news). */
  stopping(): boolean;
  /** Version 3: the START is kept (the broker granted it), before its unit is asked for. */
  kept?(plan: KeepPlan): void;
  /** Version 3: the kept session's rendezvous is bound and passed (its first record is written now, before
   * its unit is asked for: a supervisor that dies from here on leaves a session the next one adopts). */
  rendezvous?(facts: { unit: string; sessionId: number; plan: KeepPlan; program: string; cwd: string; rows: number; cols: number }): void;
}

/** What the started session's journal line and the broker's report need. */
export interface Started {
  mainPid: number;
  unit: string;
  frame: FrameOf<'start'>;
  /** Version 3: the session's id (sessionIdOf its unit), and its keep plan when kept. */
  sessionId?: number;
  keep?: KeepPlan;
  /** The working directory as this process sees the START's descriptor (for LIST). */
  cwd: string;
  programPid: number;
  /** A warm unit's wall clock (RuntimeMaxSec=, which its unit went without), held by a root timer from now. */
  wallClockMs?: number;
  /** Drawn from the spare's warm unit. */
  warm?: boolean;
}

/** Runs the start; resolves once the helper named its program, rejects with why it did not. */
export async function startSession(context: StartContext): Promise<Started> {
  const aborted = context.aborted.then((error) => {
    throw error ?? new SessionError(ErrorCode.INTERNAL, 'session ended before its start');
  });
  aborted.catch(() => undefined);
  const deadline = setTimeout(context.deadline, context.deadlineMs);
  let start;
  try {
    start = await raceAbort(receiveStart(context.client, context.version), aborted, (late) => closeQuietly(late.cwdFd));
  } finally {
    clearTimeout(deadline);
  }
  // START was the one frame that carries a descriptor: from here the client's sends of one fail.
  passRights(context.client.fd, false);
  try {
    return await Promise.race([settled(launch(context, start.frame, start.cwdFd)), aborted]);
  } finally {
    closeQuietly(start.cwdFd);
  }
}

async function launch(context: StartContext, frame: FrameOf<'start'>, cwdFd: number): Promise<Started> {
  const { deps, units, version, programPid } = context;
  const { config, manager, helperPath } = deps;
  const unsafe = unsafeHelper(helperPath);
  if (unsafe) throw new SessionError(ErrorCode.INTERNAL, `the session helper is not installed safely: ${unsafe}`);
  const keep = keepPlanFor(frame, config, version);
  // Judged before anything is asked of the broker or systemd: a request outside the operator's bounds starts nothing.
  const sandbox = resolveSandbox(frame, config.session, keep?.retainBytes ?? 0);
  // The session's own profile decides (a START above the floor included), on the descriptor the unit will get.
  const operatorPaths = [...config.session.workspaceRead.map((path) => ({ path, writable: false })), ...config.session.workspaceWrite.map((path) => ({ path, writable: true }))];
  const look = sandbox.profile === 'workspace' ? checkWorkspace(cwdFd, config.client, operatorPaths) : { helperArgs: [], binds: [] };
  if (keep) {
    // Counted against limits.maxKept by the broker before anything is started for it.
    if (!(await deps.askKeep?.())) throw new SessionError(ErrorCode.KEEP_LIMIT, `kept session limit reached (${config.limits.maxKept})`);
    context.kept?.(keep);
  }
  // The spare's warm unit when one fits and answers (warm-unit.ts); its name was drawn as below. A
  // sandbox other than the warm unit's (warm-plan.ts sandboxFitsWarm) takes a fresh unit. The draw
  // waits (250 ms at most): a session aborted meanwhile has closed its descriptors, so nothing goes on,
  // and a unit drawn for it is stopped.
  let abortedNow = false;
  void context.aborted.then(() => (abortedNow = true));
  const warm = sandboxFitsWarm(sandbox, config) ? await deps.drawWarm?.(keep !== undefined) : undefined;
  if (abortedNow) {
    if (warm) {
      closeQuietly(warm.fd);
      void deps.manager.stopAndWait(warm.name, unitStopWaitMs(config)).catch((error: Error) => deps.log(`warm unit ${warm.name}: stopping it failed: ${error.message}`));
    }
    throw new SessionError(ErrorCode.INTERNAL, 'session ended before its start');
  }
  let prepared: PreparedLaunch;
  try {
    prepared = prepareLaunch(context, frame, cwdFd, sandbox, keep, look, warm?.name);
    // A warm unit's session options come with LAUNCH, not through its unit's properties: the same check.
    if (warm) checkHelperOptions(sandbox.profile, prepared.spec.helperArgs);
  } catch (error) {
    // The drawn channel is nobody's until launchWarm gives it to its link, and a client can make this
    // stretch throw (its peer leaving the client unit fails the re-check): one root fd a START otherwise.
    if (warm) closeQuietly(warm.fd);
    throw error;
  }
  const { name, sessionId, cwd, spec, envMessage, started } = prepared;
  if (warm) return launchWarm(context, { frame, cwdFd, name, sessionId, keep, warm, launch: { args: spec.helperArgs, envMessage, started } });
  // A session whose guarantees are confirmed on its started unit gets ENV and GO only then (guarantees.ts):
  // its helper waits for ENV before it forks the program, so nothing of the program runs unconfirmed.
  const confirming = needsConfirming(sandbox);
  const { link, helperEnd } = openHelperLink(envMessage, started, context.helperEvents, keep ? { retainBytes: keep.retainBytes } : undefined, confirming);
  // RENDEZVOUS goes behind GO: a session confirmed first binds it once GO is sent.
  const bindRendezvous = (end: number | undefined) => {
    if (!keep || !deps.keptStore) return;
    rendezvous(deps.keptStore, deps.rendezvousCgroup, sessionId, link, end);
    context.rendezvous?.({ unit: name, sessionId, plan: keep, program: frame.argv[0] ?? '', cwd, rows: frame.rows, cols: frame.cols });
  };
  if (!confirming) bindRendezvous(helperEnd);
  context.launched(link);
  const start = startUnit(manager, name, spec, { cwdFd, clientFd: context.client.fd, helperEnd }, context.aborted);
  const { job } = start;
  // From the helper's fork on, its control channel is read; the session counts as started once it
  // names its program (Type=exec: a helper that runs has been exec'd, so its job ends "done").
  const mainPid = await start.mainPid;
  units.watch();
  link.start();
  if (confirming) {
    await unlessJobFails(confirmGuarantees(manager, name, mainPid, sandbox, job), job);
    if (!link.releaseStart()) throw new SessionError(ErrorCode.INTERNAL, 'the session helper cannot be reached');
    bindRendezvous(undefined);
  }
  const confirmed = programPid.confirm(version, mainPid, name, {
    // What the helper sent before its unit ended is read first: a fast failure has its report.
    unitDone: context.unitDone.then(() => link.readAvailable()),
    timeoutMs: config.limits.operationTimeoutMs,
  });
  try {
    await unlessJobFails(confirmed, job);
  } catch (error) {
    // A program that exits at once with a status of systemd's own range (200..243) fails the job
    // (start-outcome.ts); if the helper had named it, it has written STARTED: the session ran, and
    // it ends as any started session does, as for any job failure seen after the start.
    link.readAvailable();
    if (!programPid.known) throw error;
    await confirmed;
  }
  context.record.started();
  // After this the unit's own end decides the session; a late job failure is only told, unless
  // our own stop (a hang-up, a report, a shutdown in the few ms before JobRemoved) cancelled it.
  job.catch((error: Error) => {
    if (!context.stopping()) deps.log(`${name}: the start job failed after the program started: ${error.message}`);
  });
  // The call went out long before: the fork it announced came after its reply.
  start.release();
  return { mainPid, unit: name, frame, sessionId, keep, cwd, programPid: await confirmed };
}

type PreparedLaunch = ReturnType<typeof prepareLaunch>;

/** The session's unit name (the warm unit's when one was drawn), its re-checked peer and its unit's description. */
function prepareLaunch(context: StartContext, frame: FrameOf<'start'>, cwdFd: number, sandbox: SessionSandbox, keep: KeepPlan | undefined, look: ReturnType<typeof checkWorkspace>, warmName: string | undefined) {
  const { deps, units, version } = context;
  const { config, helperPath } = deps;
  // A session id of 0 is never valid on the wire (sessionIdOf): draw again (once in 2^52).
  let name = warmName ?? unitNameFor(randomBytes(16), config.unitPrefix);
  while (sessionIdOf(name, config.unitPrefix) === undefined) name = unitNameFor(randomBytes(16), config.unitPrefix);
  const sessionId = sessionIdOf(name, config.unitPrefix)!;
  units.named(name);
  // The broker learns the name first, so it can stop the unit even if this process dies mid-start.
  deps.report({ type: 'unit', name });
  recheckPeer(context.client.fd, context.pidfd, context.peer);
  const keepArgs = keep ? keepHelperArgs(keep, sessionId, config.limits.maxObservers) : [];
  const cwd = cwdOf(cwdFd);
  const git = sandbox.profile === 'workspace' ? protectGit(cwdFd, cwd) : { readOnlyPaths: [], helperArgs: [] };
  const plan = planStart(frame, config, helperPath, version, [...keepArgs, ...git.helperArgs, ...look.helperArgs], sandbox, cwd);
  const { dropped, envMessage } = plan;
  const { readOnlyBinds, ...mounts } = workspaceMounts(config.session, sandbox.profile, cwd, config.client.home, look.binds);
  const spec = { ...plan.spec, readOnlyPaths: [...git.readOnlyPaths, ...readOnlyBinds], ...mounts };
  context.record.program = programLabel(frame.argv[0]!);
  // Names only, quoted: the client's values never reach the journal.
  if (dropped.length > 0) deps.log(`${name}: environment names not passed to the program: ${JSON.stringify(dropped)}`);
  // STARTED goes with GO: the helper writes it itself right after its fork (it alone knows the
  // program's pid then), so the first output waits for no turn of ours (AddRef keeps a fast end
  // visible to the watch below).
  const started = encodeFrame(startedTemplate(version, name, dropped, sessionId), version);
  return { name, sessionId, cwd, spec, envMessage, started };
}

/**
 * Confirms on the started unit what its sandbox promises, once its start job is done (Type=exec: the helper
 * has been exec'd, so its namespaces and cgroup settings are in place); NOT_ENFORCED when one does not hold.
 */
async function confirmGuarantees(manager: object, unit: string, mainPid: number, sandbox: SessionSandbox, job: Promise<unknown>): Promise<void> {
  await job;
  const { unitProperties } = manager as Partial<Pick<UnitManager, 'unitProperties'>>;
  let ipIngressBytes: bigint | undefined;
  if (sandbox.network === 'host-loopback' && unitProperties) {
    const value = (await unitProperties.call(manager, unit, { service: ['IPIngressBytes'] }).catch(() => undefined))?.IPIngressBytes;
    ipIngressBytes = typeof value === 'bigint' ? value : typeof value === 'number' ? BigInt(value) : undefined;
  }
  const problem = unconfirmed(sandbox, readUnitFacts(mainPid, unit, ipIngressBytes));
  if (problem) throw new SessionError(ErrorCode.NOT_ENFORCED, `this host does not enforce ${problem}; nothing was started`);
}

/**
 * A kept session's rendezvous (docs/architecture.md "Kept sessions across the supervisor"): root binds
 * the socket in its own 0700 directory and passes the listening end to the helper behind GO; from then on
 * the session outlives this worker, and the next one connects there. Bound before the unit is asked for:
 * a start that cannot have it fails (INTERNAL) with nothing started.
 */
export function rendezvous(store: KeptStore, cgroup: string | undefined, sessionId: number, link: HelperLink, helperEnd: number | undefined): void {
  let listening = -1;
  try {
    if (cgroup === undefined) throw new Error("the supervisor's cgroup is not known");
    store.ensure();
    store.remove(sessionId);
    // Room for a few peers queued at once (refused ones included) beside the next worker's connection.
    listening = native().listenUnix(store.socketPath(sessionId), 16);
    if (!link.sendRendezvous(listening, cgroup)) throw new Error('the session helper cannot be reached');
  } catch (error) {
    link.close();
    if (helperEnd !== undefined) closeQuietly(helperEnd);
    store.remove(sessionId);
    throw new SessionError(ErrorCode.INTERNAL, `the kept session's rendezvous: ${(error as Error).message}`, { cause: error });
  } finally {
    closeQuietly(listening);
  }
}

/** The directory's path as this process sees it (readlink of /proc/self/fd: the kernel's d_path, no
 * file system asked); '' when it cannot be named, a name that is not UTF-8 included (decoded, its bytes
 * would turn into U+FFFD and name another directory to the helper and the unit). */
export function cwdOf(fd: number): string {
  try {
    const raw = readlinkSync(`/proc/self/fd/${fd}`, { encoding: 'buffer' });
    const text = raw.toString('utf8');
    return Buffer.from(text).equals(raw) ? text : '';
  } catch {
    return '';
  }
}
