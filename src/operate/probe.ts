// Gathers the facts the pure plans need from the running host: files, accounts, systemd, Node.
import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { release } from 'node:os';
import { dirname } from 'node:path';
import { probeCgroups, type CgroupFacts } from './cgroups.ts';
import type { Accounts, Existing } from './install-plan.ts';
import { BROKER_UNIT, SOCKET_UNIT, paths, type InstallRecord, type Layout } from './layout.ts';
import { sha256, type FileFacts } from './manifest.ts';
import type { HostFacts, NodeFacts } from './requirements.ts';
import { listUnits, showUnit, type Runner } from './system.ts';
import { WARM_UNIT_DESCRIPTION } from '../systemd/index.ts';

export function fileFacts(path: string): FileFacts | undefined {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat?.isFile()) return undefined;
  return { sha256: sha256(readFileSync(path)), mode: stat.mode & 0o7777, uid: stat.uid, gid: stat.gid };
}

/**
 * Every directory a lookup of `path` passes through, symlinks followed hop by hop (path_resolution(7)):
 * whoever may write one of them can swap what the path names. The real path's own ancestors alone
 * miss a link in a user's directory that points at a root-owned Node: the unit runs the path as given.
 */
export function traversedDirs(path: string, depth = 0): string[] {
  if (depth > 40) throw Object.assign(new Error(`${path}: too many levels of symbolic links`), { code: 'ELOOP' });
  const dirs: string[] = [];
  let current = '/';
  const parts = path.split('/').filter((part) => part && part !== '.');
  for (let i = 0; i < parts.length; i += 1) {
    if (parts[i] === '..') {
      current = dirname(current); // current is a real directory: its parent is the lexical one
      continue;
    }
    dirs.push(current);
    const next = current === '/' ? `/${parts[i]}` : `${current}/${parts[i]}`;
    if (lstatSync(next).isSymbolicLink()) {
      const target = readlinkSync(next);
      const rest = parts.slice(i + 1).join('/');
      const resolved = `${target.startsWith('/') ? '' : `${current}/`}${target}${rest ? `/${rest}` : ''}`;
      return [...new Set([...dirs, ...traversedDirs(resolved, depth + 1)])];
    }
    current = next;
  }
  return [...new Set(dirs)];
}

/** A directory (symlinks resolved) and each ancestor up to /, with owner and mode. */
export function dirChain(path: string): { path: string; uid: number; mode: number }[] {
  const chain: { path: string; uid: number; mode: number }[] = [];
  let at = realpathSync(path);
  for (;;) {
    const stat = statSync(at);
    chain.push({ path: at, uid: stat.uid, mode: stat.mode & 0o7777 });
    if (at === '/') return chain;
    at = dirname(at);
  }
}

export function nodeFacts(path: string): NodeFacts {
  let real = path;
  let dirs: string[];
  try {
    real = realpathSync(path);
    dirs = traversedDirs(path);
  } catch {
    return { path, version: undefined, chain: [] };
  }
  const version = path === process.execPath ? process.version : spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 }).stdout?.trim() || undefined;
  const chain: NodeFacts['chain'] = [];
  for (const at of [real, ...dirs.filter((dir) => dir !== real).reverse()]) {
    const stat = statSync(at);
    chain.push({ path: at, uid: stat.uid, mode: stat.mode & (at === real ? 0o7777 : 0o7777 & ~0o1000) });
  }
  return { path, version, chain };
}

export function hostFacts(run: Runner, nodePath: string, cgroups: CgroupFacts = probeCgroups()): HostFacts {
  const version = /^systemd (\d+)/.exec(run('systemctl', ['--version']).stdout)?.[1];
  return {
    euid: process.geteuid?.() ?? -1,
    systemdVersion: version ? Number(version) : undefined,
    systemdRunning: lstatSync('/run/systemd/system', { throwIfNoEntry: false })?.isDirectory() ?? false,
    kernel: release(),
    node: nodeFacts(nodePath),
    cgroups,
  };
}

function records(path: string): string[][] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split(':'));
}

/** Local accounts from /etc/passwd and /etc/group (the supervisor's accounts are local system accounts). */
export function localAccounts(root = '/'): Accounts {
  const users = new Map<string, { uid: number; gid: number }>();
  for (const [name, , uid, gid] of records(`${root}etc/passwd`)) if (name && !users.has(name)) users.set(name, { uid: Number(uid), gid: Number(gid) });
  const groups = new Map<string, { gid: number; members: string[] }>();
  const names = new Map<number, string>();
  for (const [name, , gid, members] of records(`${root}etc/group`)) {
    if (!name || groups.has(name)) continue;
    groups.set(name, { gid: Number(gid), members: (members ?? '').split(',').filter(Boolean) });
    if (!names.has(Number(gid))) names.set(Number(gid), name);
  }
  return { user: (name) => users.get(name), group: (name) => groups.get(name), groupName: (gid) => names.get(gid) };
}

export function readRecord(layout: Layout): InstallRecord | undefined {
  try {
    return JSON.parse(readFileSync(paths.record(layout), 'utf8')) as InstallRecord;
  } catch {
    return undefined;
  }
}

/** The directory of the broker a running broker was started with (its ExecStart's script: broker.cjs,
 * or broker.js for a broker of a version before the code cache). */
function brokerDir(run: Runner, mainPid: string | undefined): string | undefined {
  if (!mainPid || mainPid === '0') return undefined;
  try {
    const argv = readFileSync(`/proc/${mainPid}/cmdline`, 'utf8').split('\0');
    const script = argv.find((arg) => arg.endsWith('/broker.cjs') || arg.endsWith('/broker.js'));
    return script ? dirname(script) : undefined;
  } catch {
    return undefined;
  }
}

export function existingState(run: Runner, layout: Layout, unitPrefix: string): Existing {
  const socket = showUnit(run, SOCKET_UNIT, ['UnitFileState', 'ActiveState']);
  const broker = showUnit(run, BROKER_UNIT, ['ActiveState', 'MainPID']);
  const brokerActive = ['active', 'activating', 'reloading', 'deactivating'].includes(broker.ActiveState ?? '');
  return {
    file: fileFacts,
    isDir: (path) => lstatSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false,
    link: (path) => {
      try {
        return readlinkSync(path);
      } catch {
        return undefined;
      }
    },
    record: readRecord(layout),
    socketEnabled: socket.UnitFileState === 'enabled',
    socketActive: socket.ActiveState === 'active',
    brokerActive,
    brokerDir: brokerActive ? brokerDir(run, broker.MainPID) : undefined,
    ...((units) => ({ liveSessions: units.live, warmUnits: units.warm }))(sessionUnits(run, unitPrefix)),
    unitLoadState: (unit) => showUnit(run, unit, ['LoadState']).LoadState,
    sliceState: (slice) => {
      const shown = showUnit(run, slice, ['ActiveState', 'SliceOf']);
      return { active: shown.ActiveState === 'active', members: (shown.SliceOf ?? '').split(/\s+/).filter(Boolean) };
    },
    text: (path) => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return undefined;
      }
    },
  };
}

export function liveSessions(run: Runner, unitPrefix: string): string[] {
  return sessionUnits(run, unitPrefix).live;
}

/**
 * The session units that run, in two: live sessions, and the idle warm units (a spare's unit no START
 * drew) that are no session: an upgrade restarts a broker that only has those, and the worker's end
 * retires them; uninstall still stops any left (docs/architecture.md "Warm units").
 */
export function sessionUnits(run: Runner, unitPrefix: string): { live: string[]; warm: string[] } {
  const live: string[] = [];
  const warm: string[] = [];
  for (const unit of listUnits(run, `${unitPrefix}session-*.service`)) {
    const props = showUnit(run, unit, ['ActiveState', 'Description', 'MainPID']);
    if (props.ActiveState === 'inactive' || props.ActiveState === 'failed') continue;
    (props.Description === WARM_UNIT_DESCRIPTION && idleWarm(Number(props.MainPID ?? 0)) ? warm : live).push(unit);
  }
  return { live, warm };
}

/** A warm helper with no program yet: no child (a drawn one's program is its child). */
function idleWarm(mainPid: number): boolean {
  if (!(mainPid > 0)) return true;
  try {
    return readFileSync(`/proc/${mainPid}/task/${mainPid}/children`, 'utf8').trim() === '';
  } catch {
    return true;
  }
}
