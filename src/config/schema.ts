// The supervisor's configuration: its shape, the seeds' defaults, and pure validation that names the bad field.
import { ConfigError, absolutePaths, boolean, integer, object, only, string, type Json } from './fields.ts';
import { sandboxSettings, DEFAULT_SANDBOX, SANDBOX_KEYS, type SandboxConfig } from './sandbox.ts';

export { ConfigError } from './fields.ts';

export interface ClientConfig {
  /** The one account whose agent may ask for terminals. */
  user: string;
  group: string;
  uid: number;
  gid: number;
  /** The agent's service unit; its cgroup must hold every peer (unless requireClientUnit is false). */
  service: string | null;
  /** The account's home from passwd(5), when it names one: what a workspace may not be (src/worker/workspace-check.ts). */
  home?: string;
}

export interface LimitsConfig {
  maxSessions: number;
  maxUnauthenticated: number;
  maxAdmissionsPerMinute: number;
  /** From accept until a valid START has arrived. */
  handshakeTimeoutMs: number;
  /** After the program ended or STOP: how long remaining output may take to reach the client. */
  drainTimeoutMs: number;
  /** How long queued output may wait for a client that granted credit but does not read. */
  writeTimeoutMs: number;
  /** Every D-Bus call and unit stop. */
  operationTimeoutMs: number;
  /** The broker exits after this long with no connection and no session. */
  idleExitMs: number;
  /** Sessions one worker serves one after another, each after the last ended cleanly; 1 gives every session a fresh worker. */
  sessionsPerWorker: number;
  /** Kept sessions (protocol version 3) at once, at most maxSessions: a kept START beyond it gets KEEP_LIMIT. */
  maxKept: number;
  /** Observers of one kept session at once; the next observing ATTACH gets OBSERVER_LIMIT. */
  maxObservers: number;
}

export interface SessionConfig extends SandboxConfig {
  term: string;
  /** 'pass' (default): the client's environment reaches the program, less the built-in denylist
   * (src/worker/environment.ts) and `environmentDeny`; 'allowlist': only `environmentAllowlist` passes. */
  environmentPolicy: 'pass' | 'allowlist';
  /** With policy 'allowlist': the names a client may set in START's environment. */
  environmentAllowlist: string[];
  /** Names (or `PREFIX_*`) never passed, beyond the built-in denylist. */
  environmentDeny: string[];
  stopTimeoutSec: number;
  slice: string;
  /** Extra unit properties (resource limits, sandboxing), from an allowlist of names. */
  properties: Record<string, unknown>;
  /** Under the workspace profile: paths the program may read and execute beside the system's (absolute). */
  workspaceRead: string[];
  /** Under the workspace profile: paths the program may write beside its working directory and private /tmp (absolute). */
  workspaceWrite: string[];
  /** The longest keep time a START may ask for (its keepMs); more is BAD_START, never lowered. */
  maxKeepMs: number;
  /** The largest ring a kept START may ask for (its retainBytes), at most MAX_RETAINED_BYTES. */
  maxRetainedBytes: number;
  /** The ring of a kept START that asks for none (retainBytes 0), at most maxRetainedBytes. */
  defaultRetainedBytes: number;
  /** Warm units each idle worker keeps waiting for its next START: 1 (default) or 0 (every START starts its own unit). */
  warmUnits: number;
}

export interface Config {
  client: ClientConfig;
  /** Weaker mode when false: any process of the client account may connect, not only its service. */
  requireClientUnit: boolean;
  socketPath: string;
  /** The socket's group: given to the client service alone (SupplementaryGroups=), never to the
   * client account, so programs in sessions (the account without that group) cannot connect. */
  socketGroup: string;
  socketGid: number;
  unitPrefix: string;
  /** The session helper's path as the session unit sees it; empty means beside the worker. */
  helperPath: string;
  limits: LimitsConfig;
  session: SessionConfig;
}

export const DEFAULT_SOCKET_PATH = '/run/opencode-pty/supervisor.sock';
export const DEFAULT_CONFIG_PATH = '/etc/opencode-pty/config.json';
export const DEFAULT_SOCKET_GROUP = 'opencode-pty';

/** The earlier supervisor's constants, kept as defaults. */
export const DEFAULT_LIMITS: LimitsConfig = {
  maxSessions: 16,
  maxUnauthenticated: 32,
  maxAdmissionsPerMinute: 120,
  handshakeTimeoutMs: 5_000,
  drainTimeoutMs: 2_000,
  writeTimeoutMs: 10_000,
  operationTimeoutMs: 10_000,
  idleExitMs: 60_000,
  sessionsPerWorker: 64,
  maxKept: 8,
  maxObservers: 4,
};

export const DEFAULT_SESSION: SessionConfig = {
  term: 'xterm-256color',
  environmentPolicy: 'pass',
  environmentAllowlist: ['LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'COLORTERM', 'TZ'],
  environmentDeny: [],
  stopTimeoutSec: 5,
  // The installer's slice, with limits for all sessions together (docs/operations.md); underscores,
  // since a dash in a slice name nests it in another slice (systemd.slice(5)).
  slice: 'opencode_pty_sessions.slice',
  properties: {},
  ...DEFAULT_SANDBOX,
  workspaceRead: [],
  workspaceWrite: [],
  // A day, and opencode's own 2 MiB of replay (its persistent terminals' ring).
  maxKeepMs: 86_400_000,
  maxRetainedBytes: 2 * 1024 * 1024,
  defaultRetainedBytes: 2 * 1024 * 1024,
  // docs/architecture.md "Warm units": an idle worker's unit started ahead of its START.
  warmUnits: 1,
};

/** The most a kept session may retain (docs/protocol.md "Version 3", Limits.MAX_RETAINED_BYTES). */
export const MAX_RETAINED_BYTES = 64 * 1024 * 1024;
/** The least ring a kept START may name (retainBytes 4096..). */
export const MIN_RETAINED_BYTES = 4096;
/** keepMs is a u32 on the wire, but root's keep deadline is a timer: setTimeout's largest delay is
 * 2^31-1 ms (24.8 days); a longer one fires after 1 ms (nodejs.org/api/timers.html). */
export const MAX_KEEP_MS = 0x7fff_ffff;

/** Resolves account and group names to ids (an interface, so validation stays pure). */
export interface AccountLookup {
  user(name: string): { uid: number; gid: number; home?: string } | undefined;
  group(name: string): number | undefined;
  /** The accounts listed as members of a group (group(5)), or as its members or administrators in gshadow(5). */
  groupMembers(name: string): readonly string[];
  /** Whether gshadow(5) holds a usable password for the group (newgrp(1) lets anyone who knows it in). */
  groupPasswordSet?(name: string): boolean;
}

const ACCOUNT_NAME = /^[a-z_][a-z0-9_.-]{0,31}$/;
const UNIT_NAME = /^[A-Za-z0-9:_.\\@-]{1,250}\.service$/;
const SLICE_NAME = /^[A-Za-z0-9:_.\\-]{1,250}\.slice$/;
const UNIT_PREFIX = /^[a-z][a-z0-9-]{0,40}-$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A name, or a prefix of names written `PREFIX*`. */
const ENV_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*\*?$/;
const ABSOLUTE = /^\/[^\0]*$/;

function client(raw: unknown, accounts: AccountLookup, requireUnit: boolean): ClientConfig {
  const value = object(raw, 'client');
  only(value, 'client', ['user', 'group', 'service']);
  const user = string(value.user, 'client.user', undefined, ACCOUNT_NAME);
  const group = string(value.group, 'client.group', user, ACCOUNT_NAME);
  const account = accounts.user(user);
  if (!account) throw new ConfigError('client.user', `no such account "${user}"`);
  if (account.uid === 0) throw new ConfigError('client.user', 'must not be root (uid 0)');
  const gid = accounts.group(group);
  if (gid === undefined) throw new ConfigError('client.group', `no such group "${group}"`);
  if (gid === 0) throw new ConfigError('client.group', 'must not be gid 0');
  const service = value.service === undefined && !requireUnit ? null : string(value.service, 'client.service', undefined, UNIT_NAME);
  return { user, group, uid: account.uid, gid, service, ...(account.home ? { home: account.home } : {}) };
}

/**
 * The socket's group. With a client unit required, it must not be a group the client account has
 * (primary or listed member): every program in a session runs as that account, and the group is
 * what keeps them from connect() (EACCES), whatever path they reach the socket by.
 */
function socketGroup(raw: unknown, account: ClientConfig, accounts: AccountLookup, requireUnit: boolean): { group: string; gid: number } {
  const group = string(raw, 'socketGroup', DEFAULT_SOCKET_GROUP, ACCOUNT_NAME);
  const gid = accounts.group(group);
  if (gid === undefined) throw new ConfigError('socketGroup', `no such group "${group}" (create it with groupadd --system ${group})`);
  if (gid === 0) throw new ConfigError('socketGroup', 'must not be gid 0');
  if (requireUnit && accounts.groupPasswordSet?.(group)) {
    throw new ConfigError('socketGroup', `group ${group} has a password in /etc/gshadow: anyone who knows it could join with newgrp; lock it (gpasswd -r ${group})`);
  }
  if (requireUnit && (gid === account.gid || accounts.groupMembers(group).includes(account.user))) {
    throw new ConfigError(
      'socketGroup',
      `the client account ${account.user} has group ${group}: programs in its sessions could reach the socket; give the group only to ${account.service ?? 'the client service'} (SupplementaryGroups=)`,
    );
  }
  return { group, gid };
}

function limits(raw: unknown): LimitsConfig {
  const value = object(raw, 'limits');
  only(value, 'limits', Object.keys(DEFAULT_LIMITS));
  const day = 86_400_000;
  const maxSessions = integer(value.maxSessions, 'limits.maxSessions', DEFAULT_LIMITS.maxSessions, 1, 1024);
  return {
    maxSessions,
    maxUnauthenticated: integer(value.maxUnauthenticated, 'limits.maxUnauthenticated', DEFAULT_LIMITS.maxUnauthenticated, 1, 1024),
    maxAdmissionsPerMinute: integer(value.maxAdmissionsPerMinute, 'limits.maxAdmissionsPerMinute', DEFAULT_LIMITS.maxAdmissionsPerMinute, 1, 100_000),
    handshakeTimeoutMs: integer(value.handshakeTimeoutMs, 'limits.handshakeTimeoutMs', DEFAULT_LIMITS.handshakeTimeoutMs, 100, 60_000),
    drainTimeoutMs: integer(value.drainTimeoutMs, 'limits.drainTimeoutMs', DEFAULT_LIMITS.drainTimeoutMs, 10, 60_000),
    writeTimeoutMs: integer(value.writeTimeoutMs, 'limits.writeTimeoutMs', DEFAULT_LIMITS.writeTimeoutMs, 100, 600_000),
    operationTimeoutMs: integer(value.operationTimeoutMs, 'limits.operationTimeoutMs', DEFAULT_LIMITS.operationTimeoutMs, 100, 600_000),
    idleExitMs: integer(value.idleExitMs, 'limits.idleExitMs', DEFAULT_LIMITS.idleExitMs, 0, day),
    sessionsPerWorker: integer(value.sessionsPerWorker, 'limits.sessionsPerWorker', DEFAULT_LIMITS.sessionsPerWorker, 1, 1024),
    // A kept session holds its slot: at most maxSessions, and the default follows a smaller maxSessions.
    maxKept: integer(value.maxKept, 'limits.maxKept', Math.min(DEFAULT_LIMITS.maxKept, maxSessions), 0, maxSessions),
    maxObservers: integer(value.maxObservers, 'limits.maxObservers', DEFAULT_LIMITS.maxObservers, 0, 16),
  };
}


function session(raw: unknown, checkProperty: (name: string, value: unknown) => string | undefined): SessionConfig {
  const value = object(raw, 'session');
  only(value, 'session', [...Object.keys(DEFAULT_SESSION), ...SANDBOX_KEYS]);
  const allowlist = value.environmentAllowlist ?? DEFAULT_SESSION.environmentAllowlist;
  if (!Array.isArray(allowlist)) throw new ConfigError('session.environmentAllowlist', 'must be a list of names');
  allowlist.forEach((name, index) => string(name, `session.environmentAllowlist[${index}]`, undefined, ENV_NAME));
  const deny = value.environmentDeny ?? DEFAULT_SESSION.environmentDeny;
  if (!Array.isArray(deny)) throw new ConfigError('session.environmentDeny', 'must be a list of names');
  deny.forEach((name, index) => string(name, `session.environmentDeny[${index}]`, undefined, ENV_PATTERN));
  const policy = value.environmentPolicy ?? DEFAULT_SESSION.environmentPolicy;
  if (policy !== 'pass' && policy !== 'allowlist') throw new ConfigError('session.environmentPolicy', 'must be "pass" or "allowlist"');
  const properties = object(value.properties, 'session.properties');
  for (const [name, property] of Object.entries(properties)) {
    const problem = checkProperty(name, property);
    if (problem) throw new ConfigError(`session.properties.${name}`, problem);
  }
  return {
    term: string(value.term, 'session.term', DEFAULT_SESSION.term, /^[A-Za-z0-9._+-]{1,64}$/),
    environmentPolicy: policy,
    environmentAllowlist: [...(allowlist as string[])],
    environmentDeny: [...(deny as string[])],
    stopTimeoutSec: integer(value.stopTimeoutSec, 'session.stopTimeoutSec', DEFAULT_SESSION.stopTimeoutSec, 1, 600),
    slice: string(value.slice, 'session.slice', DEFAULT_SESSION.slice, SLICE_NAME),
    properties,
    ...sandboxSettings(value),
    workspaceRead: absolutePaths(value.workspaceRead, 'session.workspaceRead'),
    workspaceWrite: absolutePaths(value.workspaceWrite, 'session.workspaceWrite', true),
    ...retention(value),
    warmUnits: integer(value.warmUnits, 'session.warmUnits', DEFAULT_SESSION.warmUnits, 0, 1),
  };
}

/** The keep settings: each bounded, the default ring within the largest one. */
function retention(value: Json): Pick<SessionConfig, 'maxKeepMs' | 'maxRetainedBytes' | 'defaultRetainedBytes'> {
  const maxKeepMs = integer(value.maxKeepMs, 'session.maxKeepMs', DEFAULT_SESSION.maxKeepMs, 0, MAX_KEEP_MS);
  const maxRetainedBytes = integer(value.maxRetainedBytes, 'session.maxRetainedBytes', DEFAULT_SESSION.maxRetainedBytes, MIN_RETAINED_BYTES, MAX_RETAINED_BYTES);
  const fallback = Math.min(DEFAULT_SESSION.defaultRetainedBytes, maxRetainedBytes);
  const defaultRetainedBytes = integer(value.defaultRetainedBytes, 'session.defaultRetainedBytes', fallback, MIN_RETAINED_BYTES, maxRetainedBytes);
  return { maxKeepMs, maxRetainedBytes, defaultRetainedBytes };
}

/**
 * Validates a parsed config file. `checkProperty` answers whether a session property name and
 * value are allowed (undefined when fine, else the problem), so the allowlist lives with the
 * unit-property builders.
 */
export function validateConfig(
  raw: unknown,
  accounts: AccountLookup,
  checkProperty: (name: string, value: unknown) => string | undefined,
): Config {
  const value = object(raw, '(top level)');
  only(value, '', ['client', 'requireClientUnit', 'socketPath', 'socketGroup', 'unitPrefix', 'helperPath', 'limits', 'session']);
  const requireClientUnit = boolean(value.requireClientUnit, 'requireClientUnit', true);
  const account = client(value.client, accounts, requireClientUnit);
  const socket = socketGroup(value.socketGroup, account, accounts, requireClientUnit);
  return withinSize({
    client: account,
    requireClientUnit,
    socketPath: string(value.socketPath, 'socketPath', DEFAULT_SOCKET_PATH, ABSOLUTE),
    socketGroup: socket.group,
    socketGid: socket.gid,
    unitPrefix: string(value.unitPrefix, 'unitPrefix', 'opencode-pty-', UNIT_PREFIX),
    helperPath: value.helperPath === undefined ? '' : string(value.helperPath, 'helperPath', undefined, ABSOLUTE),
    limits: limits(value.limits),
    session: session(value.session, checkProperty),
  });
}

/** Every worker gets the config as one environment string (MAX_ARG_STRLEN: 128 KiB with its name),
 * or the first spare as one control message: one that fits neither would start no worker at all. */
export const MAX_CONFIG_BYTES = 120 * 1024;

function withinSize(config: Config): Config {
  const bytes = Buffer.byteLength(JSON.stringify(config));
  if (bytes > MAX_CONFIG_BYTES) throw new ConfigError('(top level)', `is ${bytes} bytes as JSON; at most ${MAX_CONFIG_BYTES} (long environment lists?)`);
  return config;
}

/** How long to wait for a session unit to stop: systemd's stop may take TimeoutStopSec for SIGTERM and
 * SIGHUP, and as long again for the final SIGKILL phase, plus a margin; never less than an operation. */
export function unitStopWaitMs(config: Pick<Config, 'limits' | 'session'>): number {
  return Math.max(config.limits.operationTimeoutMs, 2 * config.session.stopTimeoutSec * 1000 + 5000);
}

/** node-pty's kill() is a hang-up: SIGHUP alone to the program's process group first, and only this
 * long after it SIGTERM and SIGHUP to every process of the unit (src/worker/unit-stop.ts). Long enough
 * for an interactive shell or a `trap … HUP` to act on the hang-up, short enough that a stopping
 * session gives its slot back soon. */
export const HANG_UP_GRACE_MS = 1000;

/** The most a session that is stopping (STOP received, its end decided) can take until its unit is gone
 * and its slot free: the hang-up's grace, SIGTERM's step, SIGKILL's step (session.stopTimeoutSec each),
 * then systemd's stop of the unit as the backstop (unitStopWaitMs). A start that finds every slot held
 * by such sessions waits this long at most, its handshake deadline paused meanwhile. */
export function stoppingSessionBoundMs(config: Pick<Config, 'limits' | 'session'>): number {
  return HANG_UP_GRACE_MS + 2 * config.session.stopTimeoutSec * 1000 + unitStopWaitMs(config);
}
