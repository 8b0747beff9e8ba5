// Builds the StartTransientUnit property list of a session unit from a typed spec (pure, no I/O),
// one small function per group as systemd-run does (src/run/run.c transient_*_set_properties).
import { SystemdError } from './errors.ts';
import { limitProperties, type PropertyTuple } from './unit-limits.ts';
import { checkHelperOptions, isWarmHelper } from './helper-options.ts';
import { checkUnitFileText } from './unit-text.ts';
import { profileProperties, WORKSPACE_HIDDEN_SOCKETS, type SessionProfile } from './session-profile.ts';
import { budgetProperties, networkProperties, stricterOf, wallClockProperties, type SessionBudgets, type SessionNetwork } from './session-sandbox.ts';

export type { PropertyTuple, PropertyValue } from './unit-limits.ts';
export { ALLOWED_LIMIT_NAMES } from './unit-limits.ts';
export { unitNameFor, validatePrefix, DEFAULT_UNIT_PREFIX } from './unit-names.ts';
export { programLabel } from './unit-text.ts';

/**
 * Where the supervisor's socket lives, hidden from hardened sessions. The socket's group is what
 * keeps session programs out (docs/security.md): this path alone is bypassed through
 * /proc/PID/root. It costs a mount namespace per unit (about 5 ms of PID 1's CPU per start on these
 * machines), so the default profile, which has no namespace otherwise, goes without it.
 */
export const DEFAULT_INACCESSIBLE_PATHS: readonly string[] = ['/run/opencode-pty'];

export interface SessionUnitSpec {
  description: string;
  /** Absolute path of the session helper; it becomes argv[0] too. */
  helperPath: string;
  /** Arguments after argv[0], e.g. [rows, cols, ...program argv]; passed byte for byte. */
  helperArgs: string[];
  user: string;
  group: string;
  /** Directory fd the helper fchdir()s into; handed over as its stdin. */
  cwdFd: number;
  /** The helper's stdout: the client connection itself. */
  stdoutFd: number;
  /** The helper's stderr: its control channel to the worker; the journal when absent. */
  stderrFd?: number;
  /** The unit's Environment=, which reaches the session helper itself: the worker gives none (the program's
   * environment travels over the control channel instead, src/worker/session.ts). */
  environment: Readonly<Record<string, string>>;
  slice?: string;
  /** How long a stop may take before SIGKILL. */
  stopTimeoutSec: number;
  /** Operator limits and hardening, by allowlisted name (see unit-limits.ts). */
  limits?: Readonly<Record<string, unknown>>;
  /** Paths PID 1 binds read-only onto themselves in the unit (the workspace's `.git`: src/worker/git-look.ts; the operator's read paths under a covered home). */
  readOnlyPaths?: readonly string[];
  /** Paths the session may not reach, beside the profile's own (the supervisor's runtime directory under hardened and workspace, and the workspace's hidden sockets). */
  inaccessiblePaths?: readonly string[];
  /** Paths PID 1 leaves writable when the profile mounts everything else read-only (the workspace's own path and the operator's write paths). */
  writablePaths?: readonly string[];
  /** Paths PID 1 binds writable onto themselves from the host's tree (the workspace, under a covered home). */
  boundPaths?: readonly string[];
  /** A home PID 1 covers with an empty read-only file system (the workspace profile's: src/worker/workspace-plan.ts). */
  homeCover?: string;
  /** 'hardened' adds session-profile.ts's settings: no debugging of other sessions' programs; 'workspace'
   * adds to those its hidden sockets (the helper's Landlock arguments are the caller's, in helperArgs). */
  profile?: SessionProfile;
  /** The session's network (session-sandbox.ts); 'on', as without it, adds nothing. */
  network?: SessionNetwork;
  /** The session's cgroup budgets (session-sandbox.ts). */
  budgets?: SessionBudgets;
  /** The session's wall clock in ms: one value, so whoever ends the session at it can change (RuntimeMaxSec= here). */
  wallClockMs?: number;
}

/**
 * ExecStart's argv with every "$" doubled: systemd expands "$X", "${X}" and "$$" in it at exec time
 * (systemd.service(5) "Command lines"), and "$$" gives "$", so the program gets each argument as sent.
 * Not ExecStartEx with "no-env-expand": systemd 252 writes that into the transient file as an
 * "ExecStartEx=" line its unit-file parser does not know, and after any daemon-reload the live unit has
 * no ExecStart and shows LoadState=bad-setting. An ExecStart line loads back.
 */
export function execArgv(argv: readonly string[]): string[] {
  return argv.map((arg) => arg.replaceAll('$', '$$$$'));
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new SystemdError('PROPERTY_INVALID', message);
}

/** D-Bus strings cannot carry NUL, and a NUL would truncate an argument at the exec. */
function checkString(value: string, what: string): void {
  check(typeof value === 'string' && !value.includes('\0'), `${what} must be a string without NUL`);
}

function checkFd(fd: number, what: string): void {
  check(Number.isInteger(fd) && fd >= 0 && fd <= 0x7fffffff, `${what} must be a file descriptor`);
}

/** Unit-level settings (run.c transient_unit_set_properties). */
function unitProperties(spec: SessionUnitSpec): PropertyTuple[] {
  checkString(spec.description, 'description');
  const tuples: PropertyTuple[] = [
    ['Description', 's', spec.description],
    // AddRef rather than RemainAfterExit: the unit stays loaded after its process ends so we can read
    // how it ended, yet it still goes inactive (the state we wait for), and if our process dies the
    // bus connection closes, the reference goes with it and systemd collects the unit by itself.
    ['AddRef', 'b', true],
    // The default ("inactive") would keep a failed session unit loaded until someone resets it.
    ['CollectMode', 's', 'inactive-or-failed'],
  ];
  if (spec.slice !== undefined) {
    check(/^[A-Za-z0-9:_.\\-]+\.slice$/.test(spec.slice), `slice ${JSON.stringify(spec.slice)} is not a slice name`);
    tuples.push(['Slice', 's', spec.slice]);
  }
  return tuples;
}

/** How the session ends (run.c transient_kill_set_properties). */
function killProperties(spec: SessionUnitSpec): PropertyTuple[] {
  check(Number.isFinite(spec.stopTimeoutSec) && spec.stopTimeoutSec > 0, 'stopTimeoutSec must be positive');
  return [
    // Interactive shells ignore SIGTERM; SIGHUP after it ends them as a hang-up would.
    ['SendSIGHUP', 'b', true],
    ['KillMode', 's', 'control-group'],
    ['TimeoutStopUSec', 't', BigInt(Math.round(spec.stopTimeoutSec * 1_000_000))],
  ];
}

/** The process: who, where, with what (run.c transient_service_set_properties). */
function serviceProperties(spec: SessionUnitSpec): PropertyTuple[] {
  check(spec.helperPath.startsWith('/'), 'helperPath must be absolute');
  checkString(spec.helperPath, 'helperPath');
  spec.helperArgs.forEach((arg, index) => checkString(arg, `helperArgs[${index}]`));
  for (const [what, name] of [['user', spec.user], ['group', spec.group]] as const) {
    checkString(name, what);
    check(name.length > 0, `${what} must not be empty`);
  }
  checkFd(spec.cwdFd, 'cwdFd');
  checkFd(spec.stdoutFd, 'stdoutFd');
  if (spec.stderrFd !== undefined) checkFd(spec.stderrFd, 'stderrFd');
  return [
    // "exec": the start job fails when the exec fails (missing binary, unknown user) instead of
    // reporting a started session that is already dead.
    ['Type', 's', 'exec'],
    ['User', 's', spec.user],
    ['Group', 's', spec.group],
    ['StandardInputFileDescriptor', 'h', spec.cwdFd],
    ['StandardOutputFileDescriptor', 'h', spec.stdoutFd],
    spec.stderrFd === undefined ? ['StandardError', 's', 'journal'] : ['StandardErrorFileDescriptor', 'h', spec.stderrFd],
    ['Environment', 'as', environmentEntries(spec.environment)],
    // Programs in a terminal expect SIGPIPE to kill them (`yes | head`); systemd ignores it by default.
    ['IgnoreSIGPIPE', 'b', false],
    // (path, argv, ignore-failure): no prefix flags at all, never "-", "+", "!" or "@".
    ['ExecStart', 'a(sasb)', [[spec.helperPath, execArgv([spec.helperPath, ...spec.helperArgs]), false]]],
  ];
}

/** "NAME=value" entries, exactly those given; names as env_name_is_valid() accepts portably. */
export function environmentEntries(environment: Readonly<Record<string, string>>): string[] {
  return Object.entries(environment).map(([name, value]) => {
    check(/^[A-Za-z_][A-Za-z0-9_]*$/.test(name), `environment name ${JSON.stringify(name)} is not valid`);
    checkString(value, `environment value of ${name}`);
    return `${name}=${value}`;
  });
}

/** What a path written into a unit file may hold (see sandboxProperties). */
export const UNIT_PATH = /^\/[^\0-\x20\x7f:"'\\]*$/;

/** What the session may not reach (systemd.exec(5) "Sandboxing"). */
function sandboxProperties(spec: SessionUnitSpec): PropertyTuple[] {
  const profile = spec.profile ?? 'default';
  const hidden = profile === 'default' ? [] : profile === 'hardened' ? DEFAULT_INACCESSIBLE_PATHS : [...DEFAULT_INACCESSIBLE_PATHS, ...WORKSPACE_HIDDEN_SOCKETS];
  // A union: a list of the caller's never drops what the profile hides.
  const paths = [...new Set([...hidden, ...(spec.inaccessiblePaths ?? [])])];
  paths.forEach((path) => {
    checkString(path, 'inaccessible path');
    check(path.startsWith('/'), `inaccessible path ${JSON.stringify(path)} must be absolute`);
  });
  // systemd 252 writes these into the transient file escaping only '%', and its parser splits on
  // whitespace and ':' (dbus-execute.c): nothing else may reach it. A missing one fails the unit's start.
  const readOnly = spec.readOnlyPaths ?? [];
  readOnly.forEach((path) => check(UNIT_PATH.test(path), `read-only path ${JSON.stringify(path)} cannot be written into a unit`));
  const writable = spec.writablePaths ?? [];
  writable.forEach((path) => check(UNIT_PATH.test(path), `writable path ${JSON.stringify(path)} cannot be written into a unit`));
  const bound = spec.boundPaths ?? [];
  bound.forEach((path) => check(UNIT_PATH.test(path), `bound path ${JSON.stringify(path)} cannot be written into a unit`));
  // Everything read-only but these: a workspace unit without its own path would be a session that cannot write.
  check(profile !== 'workspace' || writable.length + bound.length > 0, 'the workspace profile needs its writable paths');
  const cover = spec.homeCover;
  if (cover !== undefined) check(UNIT_PATH.test(cover) && cover !== '/', `home ${JSON.stringify(cover)} cannot be covered`);
  // "-": a path that does not exist (the supervisor not yet started) is nothing to hide, not an error
  // that would fail every session with 226/NAMESPACE.
  return [
    ...(paths.length === 0 ? [] : [['InaccessiblePaths', 'as', paths.map((path) => `-${path}`)] as PropertyTuple]),
    // "-": one missing at start is left out; the helper then finds no writable mount there and refuses.
    ...(writable.length === 0 ? [] : [['ReadWritePaths', 'as', writable.map((path) => `-${path}`)] as PropertyTuple]),
    ...(readOnly.length === 0 ? [] : [['BindReadOnlyPaths', 'a(ssbt)', readOnly.map((path): [string, string, boolean, bigint] => [path, path, false, 0n])] as PropertyTuple]),
    // Binds take their source from the host's tree, not the covered one (systemd.exec(5)
    // TemporaryFileSystem=: "combining with BindPaths="); one missing fails the unit's start.
    ...(bound.length === 0 ? [] : [['BindPaths', 'a(ssbt)', bound.map((path): [string, string, boolean, bigint] => [path, path, false, 0n])] as PropertyTuple]),
    ...(cover === undefined ? [] : [['TemporaryFileSystem', 'a(ss)', [[cover, 'ro']]] as PropertyTuple]),
  ];
}

/** The full `a(sv)` list for StartTransientUnit, as plain tuples; Variants are made at the bus edge. */
export function sessionUnitProperties(spec: SessionUnitSpec): PropertyTuple[] {
  // The workspace profile's confinement is the helper's Landlock domain, and a unit with a mount namespace
  // of its own is entered by --cwd-path: its unit never starts without them (a warm one's come with LAUNCH).
  if (!isWarmHelper(spec.helperArgs)) checkHelperOptions(spec.profile ?? 'default', spec.helperArgs);
  const profile = profileProperties(spec.profile ?? 'default');
  // Under workspace, ProtectHome= too: its read-only /run/user would take the place of the profile's
  // cover there and every start would fail the helper's check (session-profile.ts workspaceProperties).
  const profileNames = new Set([...profile.map(([name]) => name), ...(spec.profile === 'workspace' ? ['ProtectHome'] : [])]);
  // The session's own network and budgets: the operator's settings of those names apply only where stricter.
  const requested = [...networkProperties(spec.network), ...budgetProperties(spec.budgets), ...wallClockProperties(spec.wallClockMs)];
  const operator = limitProperties(spec.limits ?? {}).filter(([name]) => !profileNames.has(name));
  const merged = stricterOf(requested, operator);
  const tuples = [
    ...unitProperties(spec),
    ...killProperties(spec),
    ...serviceProperties(spec),
    ...sandboxProperties(spec),
    ...profile,
    ...merged.session,
    // The operator's own limits come last (systemd applies the last setting of a name), except a name
    // the profile sets: some allowed names can also widen (NoNewPrivileges=false, PrivateTmp=false),
    // and no configuration may undo the hardened profile.
    ...merged.operator,
  ];
  // Last, over everything, whatever its source: no string becomes unit-file syntax (unit-text.ts).
  checkUnitFileText(tuples);
  return tuples;
}
