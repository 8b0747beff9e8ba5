// `run`'s profile, network and budget options (protocol version 4), pure: each value read strictly, so 0,
// a negative or fractional count, or a size past 2^53-1 is a usage error before anything is sent.
import type { Budgets, NetworkMode } from '../protocol/index.ts';

export const SANDBOX_USAGE = `Profiles, network and budgets (protocol version 4; the supervisor bounds each, docs/configuration.md):
  --profile NAME       default, hardened or workspace (default: the supervisor's floor, session.minProfile).
                       One below the floor, unknown or not offered is refused, never changed.
  --network MODE       off (the session's own loopback only), host-loopback (the host's loopback only:
                       every service listening there, the agent's own HTTP API included), or on.
  --max-time DURATION  End the session after DURATION (90s, 10m, 2h, 1d; a bare number is seconds):
                       status 124, as timeout(1) reports it.
  --max-memory SIZE    The session's memory (bytes, or with K, M, G, T); past it the kernel kills the
                       program (status 137, "oom-kill" on stderr), never the session's own helper.
  --max-tasks N        Processes and threads of the session at once.
  --max-cpu PERCENT    CPU time, in percent of one CPU (50, 50%, 200 for two CPUs).
  A budget this host cannot enforce (its memory, pids or cpu controller absent from the unified cgroup
  hierarchy) is refused (NOT_ENFORCED), never applied in name only: \`opencode-ptyctl verify\` says which.
`;

export const SANDBOX_OPTIONS = ['--profile', '--network', '--max-time', '--max-memory', '--max-tasks', '--max-cpu'] as const;
export type SandboxOption = (typeof SANDBOX_OPTIONS)[number];

export interface SandboxArgs {
  profile?: string;
  network?: NetworkMode;
  budgets: Budgets;
}

const MAX = Number.MAX_SAFE_INTEGER;
const TIME_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SIZE_UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

function positive(value: number, option: string, raw: string): number | string {
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX) return `${option} needs a whole amount from 1 to 2^53-1, got ${JSON.stringify(raw)}`;
  return value;
}

/** Takes one option's value into `args`; the usage message when it does not read. */
export function applySandboxOption(args: SandboxArgs, option: SandboxOption, value: string): string | undefined {
  switch (option) {
    case '--profile':
      if (!/^[a-z][a-z0-9-]{0,31}$/.test(value)) return `--profile needs a profile name (default, hardened, workspace), got ${JSON.stringify(value)}`;
      args.profile = value;
      return undefined;
    case '--network':
      if (value !== 'off' && value !== 'host-loopback' && value !== 'on') return `--network needs off, host-loopback or on, got ${JSON.stringify(value)}`;
      args.network = value;
      return undefined;
    case '--max-time': {
      const match = /^(\d{1,15}(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value);
      const ms = match ? positive(Math.round(Number(match[1]) * TIME_UNITS[match[2] ?? 's']!), option, value) : `--max-time needs a duration such as 90s, 10m, 2h or 1d, got ${JSON.stringify(value)}`;
      if (typeof ms === 'string') return ms;
      args.budgets.timeMs = ms;
      return undefined;
    }
    case '--max-memory': {
      const match = /^(\d{1,16})([KMGT]?)$/.exec(value);
      const bytes = match ? positive(Number(match[1]) * SIZE_UNITS[match[2]!]!, option, value) : `--max-memory needs bytes, or a number with K, M, G or T, got ${JSON.stringify(value)}`;
      if (typeof bytes === 'string') return bytes;
      args.budgets.memoryBytes = bytes;
      return undefined;
    }
    case '--max-tasks':
    case '--max-cpu': {
      const match = option === '--max-cpu' ? /^(\d{1,16})%?$/.exec(value) : /^(\d{1,16})$/.exec(value);
      const amount = match ? positive(Number(match[1]), option, value) : `${option} needs a whole number, got ${JSON.stringify(value)}`;
      if (typeof amount === 'string') return amount;
      if (option === '--max-tasks') args.budgets.tasks = amount;
      else args.budgets.cpuPercent = amount;
      return undefined;
    }
  }
}

/** The START options, or nothing when no sandbox option was given (any server version then serves). */
export function sandboxStartOptions(args: SandboxArgs): { profile?: string; network?: NetworkMode; budgets?: Budgets } {
  const budgets = Object.keys(args.budgets).length > 0 ? { budgets: args.budgets } : {};
  return { ...(args.profile === undefined ? {} : { profile: args.profile }), ...(args.network === undefined ? {} : { network: args.network }), ...budgets };
}

/** Statuses for a session systemd ended for its budget (docs/client.md "How a session ends"): the wall clock as
 * timeout(1) reports one (124); an OOM kill as a shell reports SIGKILL (137), said on stderr. */
export const TIMEOUT_STATUS = 124;

/** The line `run` writes on stderr when systemd's result says a budget ended the session. */
export function budgetEndLine(result: string): string | undefined {
  if (result === 'timeout') return 'opencode-ptyctl: the session ran out of its time (--max-time): ended (timeout)';
  if (result === 'oom-kill') return 'opencode-ptyctl: the program went past the session\'s memory (--max-memory): killed (oom-kill)';
  return undefined;
}
