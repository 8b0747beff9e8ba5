// What the sandbox's root starts with: test accounts, account files, unit masks, the boot target.
// Pure text builders plus one writer that lays them out in the launcher's state directory.
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestAccount {
  user: string;
  group: string;
  uid: number;
  gid: number;
  home: string;
}

export const CLIENT: TestAccount = { user: 'ocpty-client', group: 'ocpty-client', uid: 4242, gid: 4242, home: '/home/ocpty-client' };
export const OTHER: TestAccount = { user: 'ocpty-other', group: 'ocpty-other', uid: 4243, gid: 4243, home: '/home/ocpty-other' };
/** The socket's group (0660 root:G): no account is a member; only the agent's service unit gets it
 * (SupplementaryGroups=), so programs in sessions, running as the client account, cannot connect. */
export const SOCKET_GROUP = { name: 'opencode-pty', gid: 4240, members: [] as string[] } as const;

export const TARGET = 'opencode-pty-test.target';

/** Units the boot needs (besides the built-in -.slice, system.slice, init.scope); every other unit is masked. */
export const KEPT_UNITS: ReadonlySet<string> = new Set([
  TARGET,
  // Transient services get Requires=sysinit.target and After=basic.target; neither may be masked.
  'sysinit.target',
  'basic.target',
  'sockets.target',
  'paths.target',
  'timers.target',
  'slices.target',
  'dbus.socket',
  'dbus.service',
  'systemd-journald.socket',
  'systemd-journald-dev-log.socket',
  'systemd-journald.service',
  // `systemctl exit` starts exit.target → systemd-exit.service → shutdown.target.
  'exit.target',
  'systemd-exit.service',
  'shutdown.target',
  // SIGRTMIN+4 starts poweroff.target, the second stop step.
  'poweroff.target',
  'systemd-poweroff.service',
  'final.target',
  'umount.target',
]);

/** Where systemd looks for units and generators, besides the sandbox's own /run and /etc (systemd.unit(5), systemd.generator(7)). */
export const UNIT_DIRS = ['/usr/local/lib/systemd/system', '/usr/lib/systemd/system'];
export const GENERATOR_DIRS = ['/etc/systemd/system-generators', '/usr/local/lib/systemd/system-generators', '/usr/lib/systemd/system-generators'];

const UNIT_SUFFIX = /\.(service|socket|target|mount|automount|swap|path|timer|slice|scope|device)$/;

/** Names to mask with /dev/null links: every unit name found, except the kept ones. Drop-in and .wants directories are not units. */
export function unitsToMask(found: Iterable<string>, kept: ReadonlySet<string> = KEPT_UNITS): string[] {
  const names = new Set<string>();
  for (const name of found) if (UNIT_SUFFIX.test(name) && !kept.has(name)) names.add(name);
  return [...names].sort();
}

export function targetUnit(): string {
  return [
    '[Unit]',
    'Description=opencode-pty test sandbox',
    'Requires=basic.target',
    'Wants=dbus.socket dbus.service systemd-journald.socket systemd-journald-dev-log.socket systemd-journald.service',
    'After=basic.target dbus.service systemd-journald.service',
    '',
  ].join('\n');
}

function entryLines(text: string): string[] {
  return text.split('\n').filter((line) => line.length > 0);
}

/** The host's account files with the test accounts appended (entries of the same name are replaced). */
export function accountFiles(host: { passwd: string; group: string; shadow: string; gshadow: string }, accounts: TestAccount[]) {
  const names = new Set<string>([...accounts.map((a) => a.user), ...accounts.map((a) => a.group), SOCKET_GROUP.name]);
  const keep = (text: string) => entryLines(text).filter((line) => !names.has(line.split(':')[0]!));
  const passwd = [...keep(host.passwd), ...accounts.map((a) => `${a.user}:x:${a.uid}:${a.gid}::${a.home}:/bin/bash`)];
  const shadow = [...keep(host.shadow), ...accounts.map((a) => `${a.user}:!:19000:0:99999:7:::`)];
  const group = [
    ...keep(host.group),
    ...accounts.map((a) => `${a.group}:x:${a.gid}:`),
    `${SOCKET_GROUP.name}:x:${SOCKET_GROUP.gid}:${SOCKET_GROUP.members.join(',')}`,
  ];
  const gshadow = [
    ...keep(host.gshadow),
    ...accounts.map((a) => `${a.group}:!::`),
    `${SOCKET_GROUP.name}:!::${SOCKET_GROUP.members.join(',')}`,
  ];
  const text = (lines: string[]) => `${lines.join('\n')}\n`;
  return { passwd: text(passwd), group: text(group), shadow: text(shadow), gshadow: text(gshadow) };
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * Lays out STATE/seed (skeleton of /), STATE/run (skeleton of /run), STATE/etc (private account
 * files) and STATE/root (mount point), all read by first-stage.sh.
 */
export function writeState(state: string, name: string, accounts: TestAccount[]): void {
  const seed = join(state, 'seed');
  for (const dir of ['usr', 'etc', 'dev', 'proc', 'sys', 'run', 'var/tmp', 'var/lib', 'tmp', 'home', 'root', 'opt/opencode-pty', '.old-root']) {
    mkdirSync(join(seed, dir), { recursive: true });
  }
  chmodSync(join(seed, 'tmp'), 0o1777);
  chmodSync(join(seed, 'var/tmp'), 0o1777);
  chmodSync(join(seed, 'root'), 0o700);
  // systemd taints a system whose /var/run is not a link to /run ("var-run-bad").
  symlinkSync('../run', join(seed, 'var/run'));
  symlinkSync('../run/lock', join(seed, 'var/lock'));
  // Debian 12 is merged-/usr: the top-level directories are links into /usr.
  for (const dir of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
    if (existsSync(join('/usr', dir))) symlinkSync(`usr/${dir}`, join(seed, dir));
  }
  for (const account of accounts) {
    const home = join(seed, account.home);
    mkdirSync(home, { recursive: true });
    chownSync(home, account.uid, account.gid);
    chmodSync(home, 0o755);
  }
  mkdirSync(join(state, 'root'));

  const run = join(state, 'run');
  const units = join(run, 'systemd/system');
  const generators = join(run, 'systemd/system-generators');
  mkdirSync(units, { recursive: true });
  mkdirSync(generators, { recursive: true });
  mkdirSync(join(run, 'opencode-pty'));
  writeFileSync(join(units, TARGET), targetUnit());
  for (const unit of unitsToMask(UNIT_DIRS.flatMap(listDir))) symlinkSync('/dev/null', join(units, unit));
  // A generator is masked by a /dev/null link of the same name in a higher-priority directory.
  for (const generator of new Set(GENERATOR_DIRS.flatMap(listDir))) symlinkSync('/dev/null', join(generators, generator));

  const etc = join(state, 'etc');
  mkdirSync(etc);
  const read = (file: string) => (existsSync(`/etc/${file}`) ? readFileSync(`/etc/${file}`, 'utf8') : '');
  const files = accountFiles({ passwd: read('passwd'), group: read('group'), shadow: read('shadow'), gshadow: read('gshadow') }, accounts);
  writeFileSync(join(etc, 'passwd'), files.passwd, { mode: 0o644 });
  writeFileSync(join(etc, 'group'), files.group, { mode: 0o644 });
  writeFileSync(join(etc, 'shadow'), files.shadow, { mode: 0o640 });
  writeFileSync(join(etc, 'gshadow'), files.gshadow, { mode: 0o640 });
  writeFileSync(join(etc, 'machine-id'), `${randomBytes(16).toString('hex')}\n`, { mode: 0o444 });
  writeFileSync(join(etc, 'hostname'), `${name}\n`, { mode: 0o644 });
}
