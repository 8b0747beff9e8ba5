// Install and upgrade as a pure plan: which files, groups and commands an install touches, each
// marked changed or unchanged, from facts a probe gathered. `--dry-run` prints it; apply.ts runs it.
import { DEFAULT_SOCKET_PATH } from '../config/index.ts';
import { BROKER_SLICE, BROKER_UNIT, SERVICE_TEMPLATE, SESSIONS_SLICE, SOCKET_UNIT, paths, recordedSlices, type InstallRecord, type Layout } from './layout.ts';
import { artifactProblems, sha256, versionName, type BuildManifest, type FileFacts } from './manifest.ts';
import { configuredPropertyNames, sessionLimitReport } from './cgroup-limits.ts';
import { migrateSessionSlice } from './slice-migration.ts';
import { slicesToStop, type SliceState } from './slices.ts';
import { hostNotes, hostProblems, type HostFacts } from './requirements.ts';
import { clientDropIn, configReadme, serviceUnit, sliceUnit, socketDropIn } from './unit-files.ts';

export interface InstallOptions {
  clientUser: string;
  /** Default: the client account's primary group. */
  clientGroup: string | undefined;
  clientUnit: string;
  socketGroup: string;
  layout: Layout;
  unitPrefix: string;
}

export interface Bundle {
  dir: string;
  manifest: BuildManifest;
  manifestText: string;
  socketTemplate: string;
  serviceTemplate: string;
}

export interface Accounts {
  user(name: string): { uid: number; gid: number } | undefined;
  group(name: string): { gid: number; members: string[] } | undefined;
  groupName(gid: number): string | undefined;
}

/** What is on the host now. `file` answers for regular files (undefined when absent). */
export interface Existing {
  file(path: string): FileFacts | undefined;
  isDir(path: string): boolean;
  link(path: string): string | undefined;
  record: InstallRecord | undefined;
  socketEnabled: boolean;
  socketActive: boolean;
  brokerActive: boolean;
  /** The bundle directory the running broker's process was started from. */
  brokerDir: string | undefined;
  liveSessions: string[];
  /** Idle warm units: no session (an upgrade does not wait for them), but uninstall stops them. */
  warmUnits?: string[];
  /** systemd's LoadState of a unit ("loaded", "not-found"…); undefined when it could not be asked. */
  unitLoadState?: (unit: string) => string | undefined;
  /** A slice's state and members (default: active and empty). */
  sliceState?: (slice: string) => SliceState;
  /** A text file's content (the config, to migrate its old default slice); undefined when unreadable. */
  text?: (path: string) => string | undefined;
}

export type Step =
  | { op: 'groupadd'; name: string }
  | { op: 'groupdel'; name: string }
  | { op: 'mkdir'; path: string; mode: number }
  | { op: 'bundle'; from: string; to: string; files: { path: string; mode: number; sha256: string }[] }
  | { op: 'link'; path: string; target: string }
  | { op: 'write'; path: string; content: string; mode: number }
  | { op: 'remove'; path: string; recursive: boolean }
  | { op: 'systemctl'; args: string[] }
  | { op: 'wait-sessions'; units: string[] };

export interface PlannedStep {
  step: Step;
  change: boolean;
}

export interface Plan {
  /** Why the plan must not run; nothing is changed when there are any. */
  refusals: string[];
  steps: PlannedStep[];
  notes: string[];
  /** What works but not as configured (printed as warnings; never a refusal). */
  warnings?: string[];
}

const UNIT_NAME = /^[A-Za-z0-9:_.\\@-]{1,250}\.service$/;
const GROUP_NAME = /^[a-z_][a-z0-9_.-]{0,31}$/;

function accountProblems(options: InstallOptions, accounts: Accounts): { problems: string[]; group: string | undefined } {
  const problems: string[] = [];
  const user = accounts.user(options.clientUser);
  if (!user) return { problems: [`no such account "${options.clientUser}" (--client-user)`], group: undefined };
  if (user.uid === 0) problems.push(`the client account must not be root (uid 0)`);
  const group = options.clientGroup ?? accounts.groupName(user.gid);
  const gid = group === undefined ? undefined : accounts.group(group)?.gid;
  if (group === undefined || gid === undefined) problems.push(`no such group "${group ?? user.gid}" (--client-group)`);
  else if (gid === 0) problems.push(`the client group must not be gid 0`);
  if (!UNIT_NAME.test(options.clientUnit)) problems.push(`--client-unit ${JSON.stringify(options.clientUnit)} is not a service unit name`);
  if (!GROUP_NAME.test(options.socketGroup)) problems.push(`--socket-group ${JSON.stringify(options.socketGroup)} is not a group name`);
  const socketGroup = accounts.group(options.socketGroup);
  if (options.socketGroup === group) problems.push(`the socket group must not be the client's own group ${group}`);
  if (socketGroup && (socketGroup.members.includes(options.clientUser) || socketGroup.gid === user.gid)) {
    // Membership in /etc/group would give every process of the account the socket, not only its service.
    problems.push(`${options.clientUser} is a member of the socket group ${options.socketGroup} in /etc/group; remove it (gpasswd -d ${options.clientUser} ${options.socketGroup}): only ${options.clientUnit} gets the group`);
  }
  return { problems, group };
}

/** The config install writes on first install (kept afterwards: it is the operator's). */
export function initialConfig(options: InstallOptions, group: string): Record<string, unknown> {
  return {
    client: { user: options.clientUser, group, service: options.clientUnit },
    socketGroup: options.socketGroup,
    unitPrefix: options.unitPrefix,
    socketPath: DEFAULT_SOCKET_PATH,
    session: { slice: SESSIONS_SLICE },
  };
}

export function planInstall(options: InstallOptions, bundle: Bundle, host: HostFacts, accounts: Accounts, existing: Existing): Plan {
  const { layout } = options;
  const steps: PlannedStep[] = [];
  const notes: string[] = [...hostNotes(host)];
  const { problems, group } = accountProblems(options, accounts);
  const refusals = [...hostProblems(host, bundle.manifest.node), ...problems, ...artifactProblems(bundle.manifest)];
  if (existing.record && existing.record.clientUnit !== options.clientUnit) {
    refusals.push(`installed for ${existing.record.clientUnit}; uninstall first to change --client-unit`);
  }
  // The config keeps the first install's account (it is the operator's file): another one would be ignored.
  if (existing.record?.clientUser !== undefined && existing.record.clientUser !== options.clientUser) {
    refusals.push(`installed for the account ${existing.record.clientUser}; uninstall first to change --client-user`);
  }
  if (refusals.length || group === undefined) return { refusals, steps, notes };

  const add = (step: Step, change: boolean) => steps.push({ step, change });
  const mkdir = (path: string) => add({ op: 'mkdir', path, mode: 0o755 }, !existing.isDir(path));
  const write = (path: string, content: string) => {
    const now = existing.file(path);
    add({ op: 'write', path, content, mode: 0o644 }, !now || now.sha256 !== sha256(content) || now.mode !== 0o644);
  };

  const createdGroup = accounts.group(options.socketGroup) ? (existing.record?.createdGroup ?? null) : options.socketGroup;
  add({ op: 'groupadd', name: options.socketGroup }, !accounts.group(options.socketGroup));

  // The bundle: a new versioned directory, filled under a staging name and renamed into place.
  const version = versionName(bundle.manifestText, bundle.manifest);
  const versionDir = paths.version(layout, version);
  const files = [
    ...Object.entries(bundle.manifest.artifacts).map(([path, artifact]) => ({ path, mode: parseInt(artifact.mode, 8), sha256: artifact.sha256 })),
    { path: 'manifest.json', mode: 0o644, sha256: sha256(bundle.manifestText) },
  ];
  const bundleChanged = files.some((file) => {
    const now = existing.file(`${versionDir}/${file.path}`);
    return !now || now.sha256 !== file.sha256 || now.mode !== file.mode;
  });
  mkdir(layout.libDir);
  add({ op: 'bundle', from: bundle.dir, to: versionDir, files }, bundleChanged);
  const upgraded = existing.link(paths.current(layout)) !== version;
  add({ op: 'link', path: paths.current(layout), target: version }, upgraded);

  mkdir(layout.configDir);
  const configPath = paths.config(layout);
  const configExists = existing.file(configPath) !== undefined;
  const migration = configExists ? migrateSessionSlice(existing.text?.(configPath), configPath) : {};
  const configContent = migration.content ?? `${JSON.stringify(initialConfig(options, group), null, 2)}\n`;
  add({ op: 'write', path: configPath, content: configContent, mode: 0o644 }, !configExists || migration.content !== undefined);
  if (configExists) notes.push(migration.content ? `kept the existing ${configPath}, its session.slice rewritten` : `kept the existing ${configPath}`);
  if (migration.note) notes.push(migration.note);
  write(paths.configReadme(layout), configReadme());

  const units: [string, string][] = [
    [paths.unit(layout, SOCKET_UNIT), bundle.socketTemplate],
    [paths.unit(layout, SERVICE_TEMPLATE), serviceUnit(bundle.serviceTemplate, host.node.path, versionDir, configPath)],
    [paths.unit(layout, SESSIONS_SLICE), sliceUnit()],
    [paths.dropIn(layout, SOCKET_UNIT), socketDropIn(options.socketGroup)],
    [paths.dropIn(layout, options.clientUnit), clientDropIn(options.socketGroup)],
  ];
  const before = steps.length;
  for (const dir of [paths.dropInDir(layout, SOCKET_UNIT), paths.dropInDir(layout, options.clientUnit)]) mkdir(dir);
  for (const [path, content] of units) write(path, content);
  // A file an older install wrote and this one does not (the old sessions slice's unit) goes.
  const written = new Set([...units.map(([path]) => path), paths.configReadme(layout)]);
  for (const path of Object.keys(existing.record?.files ?? {})) if (!written.has(path)) add({ op: 'remove', path, recursive: false }, existing.file(path) !== undefined);
  const unitsChanged = steps.slice(before).some((s) => s.change);
  const socketChanged = steps.slice(before).some((s) => s.change && s.step.op === 'write' && s.step.path.includes(SOCKET_UNIT));
  const clientChanged = steps.slice(before).some((s) => s.change && s.step.op === 'write' && s.step.path.startsWith(paths.dropInDir(layout, options.clientUnit)));

  // The record lists everything so far before any command runs: a failure later still leaves uninstall a map.
  const oldVersions = existing.record?.versions ?? [];
  const keptVersions = new Set([version]);
  const brokerVersion = existing.brokerActive && existing.brokerDir?.startsWith(`${layout.libDir}/`) ? existing.brokerDir.slice(layout.libDir.length + 1) : undefined;
  const busy = existing.liveSessions.length > 0;
  // A broker runs from the directory its unit named when it started; outdated when that is not the new one.
  const brokerOutdated = existing.brokerActive && (brokerVersion !== version || unitsChanged || migration.content !== undefined);
  if (brokerOutdated && busy) {
    // It keeps its directory (and its workers start from it) until it exits when idle.
    for (const kept of brokerVersion ? [brokerVersion] : oldVersions) keptVersions.add(kept);
  }
  // Directories install creates are removed by uninstall; ones that were there before are not.
  const createdDirs = steps.filter((s) => s.change && s.step.op === 'mkdir').map((s) => (s.step as { path: string }).path);
  const dirs = [...new Set([...(existing.record?.dirs ?? []), ...createdDirs])];
  const record = (versions: string[]): InstallRecord => ({
    format: 1,
    current: version,
    versions,
    files: Object.fromEntries([...units, [paths.configReadme(layout), configReadme()]].map(([path, content]) => [path, sha256(content)])),
    dirs,
    createdGroup,
    clientUnit: options.clientUnit,
    clientUser: options.clientUser,
    socketGroup: options.socketGroup,
    nodePath: host.node.path,
    unitPrefix: options.unitPrefix,
    slices: [...new Set([...(existing.record ? recordedSlices(existing.record) : []), SESSIONS_SLICE, BROKER_SLICE])],
  });
  const recordPath = paths.record(layout);
  const anyChange = steps.some((s) => s.change);
  add({ op: 'write', path: recordPath, content: recordText(record([...new Set([...oldVersions, version])])), mode: 0o644 }, anyChange);

  add({ op: 'systemctl', args: ['daemon-reload'] }, unitsChanged);
  // Only an idle broker is restarted; a busy one keeps serving from its own directory until it exits when idle.
  if (brokerOutdated && busy) notes.push(`${BROKER_UNIT} serves ${existing.liveSessions.length} session(s) from ${existing.brokerDir ?? 'its directory'}; it keeps running and the next start uses ${versionDir}`);
  add({ op: 'systemctl', args: ['stop', BROKER_UNIT] }, brokerOutdated && !busy);
  // An older install's slices, once no session runs in them, if they hold nothing install did not create.
  const oldSlices = existing.record ? recordedSlices(existing.record).filter((slice) => slice !== SESSIONS_SLICE && slice !== BROKER_SLICE) : [];
  const stale = busy ? { stop: [], kept: [] } : slicesToStop(oldSlices, existing.sliceState ?? (() => ({ active: false, members: [] })), options.unitPrefix);
  if (stale.stop.length) add({ op: 'systemctl', args: ['stop', ...stale.stop] }, true);
  add({ op: 'systemctl', args: ['enable', SOCKET_UNIT] }, !existing.socketEnabled);
  const restartSocket = existing.socketActive && socketChanged && !busy;
  add({ op: 'systemctl', args: [restartSocket ? 'restart' : 'start', SOCKET_UNIT] }, !existing.socketActive || restartSocket);
  if (existing.socketActive && socketChanged && busy) notes.push(`${SOCKET_UNIT} changed; restart it once no session runs`);
  // A drop-in for a unit that does not exist yet loads nothing, and `systemctl restart` of it fails.
  if (existing.unitLoadState?.(options.clientUnit) === 'not-found') {
    notes.push(
      `${options.clientUnit} does not exist yet: its drop-in is written and takes effect once the unit does. Create it ` +
        `(examples/opencode.service in this package is a complete one), then: systemctl daemon-reload && systemctl enable --now ${options.clientUnit}`,
    );
  } else if (clientChanged) notes.push(`restart ${options.clientUnit} so its processes get the supplementary group ${options.socketGroup}`);

  // The slice install writes limits for, and the session properties of the config kept (a fresh one sets none).
  const limits = sessionLimitReport(host.cgroups, SESSIONS_SLICE, configExists ? configuredPropertyNames(existing.text?.(configPath)) : []);
  if (limits.note) notes.push(limits.note);
  for (const old of oldVersions) {
    if (!keptVersions.has(old)) add({ op: 'remove', path: paths.version(layout, old), recursive: true }, true);
  }
  const finalVersions = [...keptVersions];
  const pruned = oldVersions.some((old) => !keptVersions.has(old));
  // Written again only when old versions went: a plan lists each file once unless it is written twice.
  if (pruned) add({ op: 'write', path: recordPath, content: recordText(record(finalVersions)), mode: 0o644 }, true);
  return { refusals, steps, notes, warnings: limits.warning ? [limits.warning] : [] };
}

export function recordText(record: InstallRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}

/** One line per step, for --dry-run and for what a run did. */
export function describeStep(step: Step): string {
  switch (step.op) {
    case 'groupadd':
      return `groupadd --system ${step.name}`;
    case 'groupdel':
      return `groupdel ${step.name}`;
    case 'mkdir':
      return `mkdir ${step.path} (mode ${step.mode.toString(8)})`;
    case 'bundle':
    {
      // Counted as verify counts them: the build's files, with its manifest.json besides.
      const built = step.files.filter((f) => f.path !== 'manifest.json');
      return `install ${built.length} files and manifest.json from ${step.from} to ${step.to} (staged, then renamed into place): ${built.map((f) => f.path).join(', ')}`;
    }
    case 'link':
      return `ln -s ${step.target} ${step.path} (renamed into place)`;
    case 'write':
      return `write ${step.path} (mode ${step.mode.toString(8).padStart(4, '0')}, ${Buffer.byteLength(step.content)} bytes)`;
    case 'remove':
      return `remove ${step.path}${step.recursive ? ' and everything below it' : ''}`;
    case 'systemctl':
      return `systemctl ${step.args.join(' ')}`;
    case 'wait-sessions':
      return `stop and wait for ${step.units.length} session unit(s): ${step.units.join(', ')}`;
  }
}
