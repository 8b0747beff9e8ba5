// Gathers the facts the pure plans need from the running host: files, accounts, systemd, Node.
import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { release } from 'node:os';
import { dirname } from 'node:path';
import type { Accounts, Existing } from './install-plan.ts';
import { BROKER_UNIT, SOCKET_UNIT, paths, type InstallRecord, type Layout } from './layout.ts';
import { sha256, type FileFacts } from './manifest.ts';
import type { HostFacts, NodeFacts } from './requirements.ts';
import { listUnits, showUnit, type Runner } from './system.ts';

export function fileFacts(path: string): FileFacts | undefined {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat?.isFile()) return undefined;
  return { sha256: sha256(readFileSync(path)), mode: stat.mode & 0o7777, uid: stat.uid, gid: stat.gid };
}

export function nodeFacts(path: string): NodeFacts {
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    return { path, version: undefined, chain: [] };
  }
  const version = path === process.execPath ? process.version : spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 }).stdout?.trim() || undefined;
  const chain: NodeFacts['chain'] = [];
  for (let at = real; ; at = dirname(at)) {
    const stat = statSync(at);
    chain.push({ path: at, uid: stat.uid, mode: stat.mode & (at === real ? 0o7777 : 0o7777 & ~0o1000) });
    if (at === '/') break;
  }
  return { path, version, chain };
}

export function hostFacts(run: Runner, nodePath: string): HostFacts {
  const version = /^systemd (\d+)/.exec(run('systemctl', ['--version']).stdout)?.[1];
  return {
    euid: process.geteuid?.() ?? -1,
    systemdVersion: version ? Number(version) : undefined,
    systemdRunning: lstatSync('/run/systemd/system', { throwIfNoEntry: false })?.isDirectory() ?? false,
    kernel: release(),
    node: nodeFacts(nodePath),
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

/** The directory of the broker.js a running broker was started with (its ExecStart's script). */
function brokerDir(run: Runner, mainPid: string | undefined): string | undefined {
  if (!mainPid || mainPid === '0') return undefined;
  try {
    const argv = readFileSync(`/proc/${mainPid}/cmdline`, 'utf8').split('\0');
    const script = argv.find((arg) => arg.endsWith('/broker.js'));
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
    liveSessions: liveSessions(run, unitPrefix),
  };
}

export function liveSessions(run: Runner, unitPrefix: string): string[] {
  return listUnits(run, `${unitPrefix}session-*.service`).filter((unit) => {
    const state = showUnit(run, unit, ['ActiveState']).ActiveState;
    return state !== 'inactive' && state !== 'failed';
  });
}
