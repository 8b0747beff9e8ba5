// What a START asks of the worker, decided before any unit exists (pure): the program's environment
// as its ENV message, the names dropped, and the unit's spec less its descriptors. A misfit starts nothing.
import type { Config } from '../config/index.ts';
import { encodeEnv } from '../control/index.ts';
import { ErrorCode, SessionError, type FrameOf } from '../protocol/index.ts';
import { PROGRAM_OOM_SCORE_ADJ, programLabel, type SessionUnitSpec } from '../systemd/index.ts';
import { environmentPolicy, programEnvironment } from './environment.ts';
import type { SessionSandbox } from './sandbox-request.ts';
import { cwdHelperArgs } from './cwd-plan.ts';
import { workspaceHelperArgs } from './workspace-plan.ts';

export interface StartPlan {
  /** START's environment names the program does not get, in the client's order. */
  dropped: string[];
  /** The ENV message for the helper, which reads it before it forks the program. */
  envMessage: Buffer;
  spec: Omit<SessionUnitSpec, 'cwdFd' | 'stdoutFd' | 'stderrFd'>;
}

/** `keepArgs`: a kept session's helper arguments (keep-plan.ts keepHelperArgs); `sandbox`: what the START
 * gets of profile, network and budgets (sandbox-request.ts), the floor and defaults when absent;
 * `cwdPath`: the START directory's path as root sees it (under a profile with a mount namespace of its
 * own, the helper enters it there: cwd-plan.ts). */
export function planStart(frame: FrameOf<'start'>, config: Config, helperPath: string, version: number, keepArgs: string[] = [], sandbox?: SessionSandbox, cwdPath = ''): StartPlan {
  const { profile = config.session.minProfile, network, budgets = {} } = sandbox ?? {};
  const { environment, dropped } = programEnvironment(frame.env, environmentPolicy(config.session, profile), config.session.term);
  // The environment goes to the program alone, over the control channel (never the unit's Environment=,
  // which the helper would get too): encoded before the unit exists, so a misfit starts nothing.
  let envMessage: Buffer;
  try {
    envMessage = encodeEnv(environment);
  } catch (error) {
    throw new SessionError(ErrorCode.BAD_START, (error as Error).message);
  }
  return {
    dropped,
    envMessage,
    spec: {
      // Client bytes never reach unit-file text: the program's name only through a safe alphabet.
      // A profile name is [a-z0-9-] (the codec's rule): safe text, and what status reads the profile from.
      description: `opencode-pty session ${programLabel(frame.argv[0]!)}${profile === 'default' ? '' : ` (${profile})`}`,
      helperPath,
      helperArgs: [
        '--env-from-control',
        `--protocol=${version}`,
        `--write-timeout-ms=${config.limits.writeTimeoutMs}`,
        `--stop-timeout-sec=${config.session.stopTimeoutSec}`,
        // Under a memory budget the OOM killer takes the program first, never the helper (session-sandbox.ts).
        ...(budgets.memoryBytes === undefined ? [] : [`--program-oom-score-adj=${PROGRAM_OOM_SCORE_ADJ}`]),
        ...keepArgs,
        // Decided by the session's own profile (never the floor alone): where the helper enters the
        // working directory in the unit's namespace, then the workspace profile's Landlock rules.
        ...cwdHelperArgs(profile, cwdPath),
        ...workspaceHelperArgs(config.session, profile, config.client.home),
        String(frame.rows),
        String(frame.cols),
        ...frame.argv,
      ],
      user: config.client.user,
      group: config.client.group,
      environment: {},
      slice: config.session.slice,
      stopTimeoutSec: config.session.stopTimeoutSec,
      limits: config.session.properties,
      profile,
      network,
      budgets: { memoryBytes: budgets.memoryBytes, tasks: budgets.tasks, cpuPercent: budgets.cpuPercent },
      wallClockMs: budgets.timeMs,
    },
  };
}
