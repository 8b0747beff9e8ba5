// What a START gets of profile, network and budgets (pure): its request judged against the operator's floor
// and ceilings (src/config/sandbox.ts). A request outside them is refused with its own ERROR, never widened
// or narrowed in silence; what it leaves out is the operator's default. docs/protocol.md "Version 4".
import { BUDGET_MAX, networkRank, profileRank, type SandboxConfig } from '../config/index.ts';
import { BUDGET_FIELDS, ErrorCode, SessionError, checkBudget, isProtocolError, type Budgets, type FrameOf, type NetworkMode } from '../protocol/index.ts';
import type { SessionProfile } from '../systemd/index.ts';

export interface SessionSandbox {
  profile: SessionProfile;
  network: NetworkMode;
  /** Every budget the session has: asked for, or the operator's default. */
  budgets: Budgets;
}

/** What the session helper itself needs beside its ring (its own pages, the terminal's buffers, the
 * program's first exec): a MemoryMax= below this and the ring would end the helper before it reports. */
export const HELPER_MEMORY_BYTES = 16 * 1024 * 1024;

const BUDGET_NAMES: Record<keyof Budgets, string> = { timeMs: 'wall clock (ms)', memoryBytes: 'memory (bytes)', tasks: 'tasks', cpuPercent: 'CPU (%)' };

function profileOf(asked: string | undefined, config: SandboxConfig): SessionProfile {
  if (asked === undefined || asked === '') return config.minProfile;
  const rank = profileRank(asked);
  if (rank < 0) throw new SessionError(ErrorCode.PROFILE, `unknown profile ${JSON.stringify(asked)} (this server knows ${config.profiles.join(', ')})`);
  if (rank < profileRank(config.minProfile)) {
    throw new SessionError(ErrorCode.PROFILE, `profile ${asked} is below this server's floor (session.minProfile ${config.minProfile}): never lowered`);
  }
  if (!(config.profiles as string[]).includes(asked)) {
    throw new SessionError(ErrorCode.PROFILE, `profile ${asked} is not offered here (session.profiles: ${config.profiles.join(', ')})`);
  }
  return asked as SessionProfile;
}

function networkOf(asked: NetworkMode | undefined, config: SandboxConfig): NetworkMode {
  if (asked === undefined) return config.defaultNetwork;
  const rank = networkRank(asked);
  if (rank < 0) throw new SessionError(ErrorCode.NETWORK, `unknown network mode ${JSON.stringify(asked)}`);
  if (rank > networkRank(config.maxNetwork)) {
    throw new SessionError(ErrorCode.NETWORK, `network ${asked} is above this server's ceiling (session.maxNetwork ${config.maxNetwork})`);
  }
  return asked;
}

function budgetsOf(asked: Budgets | undefined, config: SandboxConfig, ringBytes: number): Budgets {
  const budgets: Budgets = {};
  for (const field of BUDGET_FIELDS) {
    const limit = config.budgets[field];
    const value = asked?.[field];
    if (value === undefined) {
      if (limit.default !== null) budgets[field] = limit.default;
      continue;
    }
    try {
      checkBudget(field, value);
    } catch (error) {
      if (isProtocolError(error)) throw new SessionError(ErrorCode.BUDGET, error.message);
      throw error;
    }
    // With no ceiling of the operator's, the most systemd can keep (a CPU quota, the kernel's task bound).
    if (value > BUDGET_MAX[field]) throw new SessionError(ErrorCode.BUDGET, `${BUDGET_NAMES[field]} budget ${value} is past the most a session can be given (${BUDGET_MAX[field]})`);
    if (limit.max !== null && value > limit.max) {
      throw new SessionError(ErrorCode.BUDGET, `${BUDGET_NAMES[field]} budget ${value} is past this server's ceiling ${limit.max} (session.budgets.${field}.max)`);
    }
    budgets[field] = value;
  }
  const least = HELPER_MEMORY_BYTES + ringBytes;
  if (budgets.memoryBytes !== undefined && budgets.memoryBytes < least) {
    throw new SessionError(
      ErrorCode.BUDGET,
      `memory budget ${budgets.memoryBytes} is below what the session itself needs (${least}: ${ringBytes} of retained output and ${HELPER_MEMORY_BYTES} for its helper)`,
    );
  }
  return budgets;
}

/**
 * The session's sandbox. Versions 1..3 ask for nothing and get the floor and the defaults (with the
 * defaults' own defaults, today's sessions exactly). `ringBytes`: the kept session's ring, 0 when not kept.
 */
export function resolveSandbox(frame: FrameOf<'start'>, config: SandboxConfig, ringBytes = 0): SessionSandbox {
  // A memory budget under the workspace profile too: the program's raised OOM score is written from
  // outside the helper's Landlock domain (native/session/oom.c, docs/security.md).
  return {
    profile: profileOf(frame.profile, config),
    network: networkOf(frame.network, config),
    budgets: budgetsOf(frame.budgets, config, ringBytes),
  };
}
