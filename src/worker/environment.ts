// The program's environment: what the client asked for, less what belongs to systemd.
// A session runs as the client's own user, so passing the client's environment gives the program nothing its
// user lacks; what must not pass is what systemd sets for a unit (socket activation, notify, the journal). The
// helper gets none of it (it reads the environment from its control channel and hands it to execve(2) only).
// The operator may instead allow only named variables.
import type { SessionConfig } from '../config/index.ts';
import { checkEnvUnique, ErrorCode, SessionError, type EnvEntry } from '../protocol/index.ts';

export type EnvironmentMode = 'pass' | 'allowlist';

export interface EnvironmentPolicy {
  /** 'pass': every name but the denied ones (the default); 'allowlist': only `allowlist`, less the denied ones. */
  mode: EnvironmentMode;
  allowlist: readonly string[];
  /** The operator's own additions to DENIED: names, or prefixes written as `NAME_*`. */
  deny: readonly string[];
}

/**
 * Never passed, whatever the policy (systemd.exec(5), "Environment Variables in Spawned Processes";
 * sd_listen_fds(3); sd_notify(3); sd_watchdog_enabled(3)). `NAME_*` is a prefix.
 */
export const DENIED: readonly string[] = [
  // Set by systemd for the unit: a copy from the client would describe the client's unit, not this one.
  'LISTEN_*',
  'NOTIFY_SOCKET',
  'WATCHDOG_PID',
  'WATCHDOG_USEC',
  'INVOCATION_ID',
  'JOURNAL_STREAM',
  'MANAGERPID',
  'MAINPID',
  'SYSTEMD_*',
  'SERVICE_RESULT',
  'EXIT_CODE',
  'EXIT_STATUS',
  'MONITOR_*',
  'TRIGGER_*',
  'PIDFILE',
  'CREDENTIALS_DIRECTORY',
  'RUNTIME_DIRECTORY',
  'STATE_DIRECTORY',
  'CACHE_DIRECTORY',
  'LOGS_DIRECTORY',
  'CONFIGURATION_DIRECTORY',
  'MEMORY_PRESSURE_WATCH',
  'MEMORY_PRESSURE_WRITE',
  // Not the dynamic loader's LD_* and GLIBC_TUNABLES: they once had to stay out because the unit's
  // environment reached the session helper too (which holds the client connection). The environment now
  // reaches the program alone, over the helper's control channel and execve(2), so they apply only to a
  // program of the client's own user, who could set them there anyway (LD_LIBRARY_PATH is common).
];

/** The policy a session's config gives: in the hardened and workspace profiles only the operator's allowlist passes,
 * whatever `environmentPolicy` says (one session's programs are kept apart from the agent's tools there). */
export function environmentPolicy(session: Pick<SessionConfig, 'profile' | 'environmentPolicy' | 'environmentAllowlist' | 'environmentDeny'>): EnvironmentPolicy {
  return {
    mode: session.profile !== 'default' ? 'allowlist' : session.environmentPolicy,
    allowlist: session.environmentAllowlist,
    deny: session.environmentDeny,
  };
}

export interface ProgramEnvironment {
  /** A Map, not an object: a client's name is a key, never a property (`__proto__` would be lost). */
  environment: Map<string, string>;
  /** Names the client asked for that the program does not get, in the client's order (never silent). */
  dropped: string[];
}

function matches(name: string, patterns: readonly string[]): boolean {
  return patterns.some((pattern) => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern));
}

/** Shell variable names only (env_name_is_valid in systemd's env-util.c: bash's character set, no leading
 * digit), the rule from when the environment went through the unit; kept, e.g. an exported `BASH_FUNC_f%%`
 * is told as dropped rather than handed to a program that did not ask for shell functions. */
const UNIT_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A plain terminfo name: the client's TERM is honoured only then. */
const TERM_NAME = /^[A-Za-z0-9._+-]{1,64}$/;

/**
 * What the program gets of `requested`. A name twice is refused (BAD_START, docs/protocol.md START), as
 * the decoder already refuses it: judged here again, before any unit exists, so `dropped` is always a
 * list of distinct names that STARTED version 2 can carry (its encoder would refuse it after the fork).
 */
export function programEnvironment(requested: readonly EnvEntry[], policy: EnvironmentPolicy, term: string): ProgramEnvironment {
  try {
    checkEnvUnique(requested.map((entry) => entry.name));
  } catch (error) {
    throw new SessionError(ErrorCode.BAD_START, (error as Error).message);
  }
  const allowed = new Set(policy.allowlist);
  const environment = new Map<string, string>();
  const dropped: string[] = [];
  for (const { name, value } of requested) {
    if (name === 'TERM') continue;
    const pass = UNIT_ENV_NAME.test(name) && !matches(name, DENIED) && !matches(name, policy.deny) && (policy.mode === 'pass' || allowed.has(name));
    if (pass) environment.set(name, value);
    else dropped.push(name);
  }
  const requestedTerm = requested.find((entry) => entry.name === 'TERM')?.value;
  if (requestedTerm !== undefined && !TERM_NAME.test(requestedTerm)) dropped.push('TERM');
  environment.set('TERM', requestedTerm !== undefined && TERM_NAME.test(requestedTerm) ? requestedTerm : term);
  return { environment, dropped };
}

/** Version 1's rule: only allowlisted names, TERM from the config unless the client's is plain. */
export function sessionEnvironment(requested: EnvEntry[], allowlist: readonly string[], term: string): Record<string, string> {
  // fromEntries defines own properties, so even a `__proto__` entry stays one.
  return Object.fromEntries(programEnvironment(requested, { mode: 'allowlist', allowlist, deny: [] }, term).environment);
}
