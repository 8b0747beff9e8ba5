// A START in the spare's warm unit (warm-unit.ts), once its helper answered CLAIM: the session's
// arguments, its directory and the client's connection go over the control channel (LAUNCH), then ENV
// and GO as for a fresh unit, and the session counts as started once the helper names its program.
// What a fresh start asks of PID 1 (the unit's creation and fork) is done already.
import { native } from '../native/index.ts';
import { encodeLaunch } from '../control/index.ts';
import { ErrorCode, SessionError, type FrameOf } from '../protocol/index.ts';
import { HelperLink } from './helper-link.ts';
import type { KeepPlan } from './keep-plan.ts';
import { cwdOf, rendezvous, type StartContext, type Started } from './session-start.ts';
import type { WarmClaim } from './warm-unit.ts';
import { warmWallClockMs } from './warm-plan.ts';

export interface WarmLaunch {
  frame: FrameOf<'start'>;
  cwdFd: number;
  name: string;
  sessionId: number;
  keep: KeepPlan | undefined;
  warm: WarmClaim;
  /** The helper's arguments as a fresh unit's ExecStart would carry them, the ENV message, the STARTED template. */
  launch: { args: string[]; envMessage: Buffer; started: Buffer };
}

export async function launchWarm(context: StartContext, plan: WarmLaunch): Promise<Started> {
  const { deps, units, version, programPid } = context;
  const { config } = deps;
  const { frame, cwdFd, name, sessionId, keep, warm } = plan;
  const link = new HelperLink(warm.fd, context.helperEvents, keep ? { retainBytes: keep.retainBytes } : undefined);
  // The HELLO the warm unit read is the channel's first message: the session's decoder takes it as read here.
  link.preface(warm.hello);
  let launched = false;
  let handed = false;
  try {
    const launch = encodeLaunch(plan.launch.args);
    launched = native().sendmsg(warm.fd, launch, 0, launch.length, [cwdFd, context.client.fd]) === launch.length;
    handed = launched && link.sendEnv(plan.launch.envMessage) && link.sendGo(plan.launch.started);
  } catch (error) {
    link.close();
    throw new SessionError(ErrorCode.INTERNAL, `the warm session helper cannot be launched: ${(error as Error).message}`, { cause: error });
  }
  if (!launched) {
    link.close();
    throw new SessionError(ErrorCode.INTERNAL, 'the warm session helper cannot be reached');
  }
  // A helper that took LAUNCH and refused it before reading ENV (its working directory is not there in
  // its unit's namespace: native/session/cwd.c) reported why and exited, so ENV or GO met a closed
  // channel: its report, read below as a fresh unit's is, answers the START (START_FAILED). Without GO
  // it never holds the client's write side; nothing is bound for it.
  const kept = handed && keep && deps.keptStore;
  if (kept) rendezvous(deps.keptStore!, deps.rendezvousCgroup, sessionId, link, -1);
  const cwd = cwdOf(cwdFd);
  if (kept) context.rendezvous?.({ unit: name, sessionId, plan: keep, program: frame.argv[0] ?? '', cwd, rows: frame.rows, cols: frame.cols });
  context.launched(link);
  units.watch();
  link.start();
  const confirmed = await programPid.confirm(version, warm.mainPid, name, {
    unitDone: context.unitDone.then(() => link.readAvailable()),
    timeoutMs: config.limits.operationTimeoutMs,
  });
  if (!handed) throw new SessionError(ErrorCode.INTERNAL, 'the warm session helper cannot be reached');
  context.record.started();
  return { mainPid: warm.mainPid, unit: name, frame, sessionId, keep, cwd, programPid: confirmed, wallClockMs: warmWallClockMs(config), warm: true };
}
