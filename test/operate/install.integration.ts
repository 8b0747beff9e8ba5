// install, verify, status, stop, upgrade and uninstall against the sandbox's real systemd, with
// sessions through the installed units, at the default paths (/usr/lib/opencode-pty, /etc/opencode-pty).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../sandbox/index.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const AGENT = 'opencode-pty-agent.service';
const BUILD = '/opt/opencode-pty-build';
const CLI = '/usr/lib/opencode-pty/current/cli.js';
let sandbox: Sandbox;

/** The built dist/ copied into the sandbox (its /work is not there): the README's `node dist/cli.js install`. */
async function copyBundle(to: string, manifest?: (text: string) => string): Promise<void> {
  const files: { from?: string; content?: string; to: string; mode: number }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(`${root}dist/${dir}`, { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (rel === 'manifest.json' && manifest) files.push({ content: manifest(readFileSync(`${root}dist/manifest.json`, 'utf8')), to: `${to}/${rel}`, mode: 0o644 });
      else files.push({ from: `${root}dist/${rel}`, to: `${to}/${rel}`, mode: /\.(js|node|json)$|^units\//.test(rel) && !/^(cli|broker|worker)\.js$/.test(rel) ? 0o644 : 0o755 });
    }
  };
  walk('');
  await sandbox.install(files);
}

function opencodePty(args: string[], cli = `${BUILD}/cli.js`) {
  return sandbox.exec(['/usr/bin/node', cli, ...args], { timeoutMs: 120_000 });
}

/** The agent's unit running the installed CLI as the client account (SupplementaryGroups= comes from install's drop-in). */
function agentArgv(command: string[], unit = AGENT): string[] {
  return [
    'systemd-run', '--quiet', '--wait', '--collect', '--pipe', `--unit=${unit}`, '--service-type=exec',
    `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--working-directory=${sandbox.client.home}`,
    '--', '/usr/bin/node', CLI, 'run', '--', ...command,
  ];
}

/** The agent's unit running a shell script (for more than one session from inside the one agent unit). */
function agentShell(script: string): string[] {
  const argv = agentArgv([]);
  return [...argv.slice(0, argv.indexOf('--') + 1), '/bin/sh', '-c', script];
}

async function status(): Promise<any> {
  const result = await opencodePty(['status', '--json'], CLI);
  assert.is(result.code, 0, result.stderr);
  return JSON.parse(result.stdout);
}

/** Waits for the state through systemd's own job queue: `systemctl start` of a target-less wait is not available, so poll status. */
async function untilSessions(count: number): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const now = await status();
    // A spare's warm unit is listed too, as warm: no session until a START draws it.
    if (now.sessions.filter((s: any) => s.state === 'active' && !s.warm).length === count) return now;
  }
  throw new Error(`never saw ${count} live session(s)`);
}

test.before(async () => {
  const reason = sandboxUnavailable();
  if (reason) throw new Error(reason);
  sandbox = await bootSandbox({ name: 'operate-install' });
  await copyBundle(BUILD);
  // A fresh host: the socket group does not exist yet (the sandbox seeds it for the other suites).
  const removed = await sandbox.exec(['sh', '-c', 'groupdel opencode-pty && groupadd --users ocpty-client ocpty-member']);
  if (removed.code !== 0) throw new Error(removed.stderr);
});

test.after(async () => {
  await sandbox?.stop();
});

test('--dry-run prints every file and command and changes nothing', async () => {
  const result = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT, '--dry-run']);
  assert.is(result.code, 0, result.stderr);
  for (const expected of ['would: groupadd --system opencode-pty', 'would: install', '/usr/lib/opencode-pty/0.1.0-', 'would: write /etc/opencode-pty/config.json', `would: write /etc/systemd/system/${AGENT}.d/opencode-pty-socket.conf`, 'would: systemctl daemon-reload', 'would: systemctl start opencode-pty-supervisor.socket']) {
    assert.ok(result.stdout.includes(expected), `dry run names ${expected}:\n${result.stdout}`);
  }
  const left = await sandbox.exec(['sh', '-c', 'ls -A /usr/lib/opencode-pty /etc/opencode-pty; getent group opencode-pty || echo no-group']);
  assert.is(left.stdout, '/etc/opencode-pty:\n\n/usr/lib/opencode-pty:\nno-group\n');
});

test('install refuses a client account that is a member of the socket group, and changes nothing', async () => {
  const result = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT, '--socket-group', 'ocpty-member']);
  assert.is(result.code, 3);
  assert.match(result.stderr, /ocpty-client is a member of the socket group ocpty-member/);
  assert.is((await sandbox.exec(['ls', '-A', '/usr/lib/opencode-pty'])).stdout, '');
});

test('install: group, bundle, config, units and drop-ins; the socket listens with the socket group', async () => {
  const result = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT]);
  assert.is(result.code, 0, result.stderr + result.stdout);
  const group = await sandbox.exec(['getent', 'group', 'opencode-pty']);
  assert.match(group.stdout, /^opencode-pty:x:\d+:$/m, 'created, with no members');
  const unit = await sandbox.exec(['cat', '/etc/systemd/system/opencode-pty-supervisor@.service']);
  assert.match(unit.stdout, /^ExecStart=\/usr\/bin\/node \/usr\/lib\/opencode-pty\/0\.1\.0-[0-9a-f]{12}\/broker\.cjs$/m);
  const socket = await sandbox.exec(['stat', '-c', '%a %G', '/run/opencode-pty/supervisor.sock']);
  assert.is(socket.stdout, '660 opencode-pty\n');
  const dropIn = await sandbox.exec(['cat', `/etc/systemd/system/${AGENT}.d/opencode-pty-socket.conf`]);
  assert.match(dropIn.stdout, /^SupplementaryGroups=opencode-pty$/m);
  // From a build directory the command is on no PATH: the next steps name the installed copy, and work.
  assert.match(result.stdout, 'note: opencode-ptyctl is not on PATH');
  const next = /Check it with: (.*)$/m.exec(result.stdout)![1]!;
  assert.is(next, `/usr/bin/node ${CLI} verify && /usr/bin/node ${CLI} status`);
  const checked = await sandbox.exec(['sh', '-c', next], { timeoutMs: 120_000 });
  assert.is(checked.code, 0, checked.stdout + checked.stderr);
  assert.match(checked.stdout, /^ok: \d+ files of opencode-pty-supervisor/);
});

test('a second install changes nothing and says so', async () => {
  const result = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT]);
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stdout, /already installed, nothing changed/);
});

test('verify is clean after install', async () => {
  const result = await opencodePty(['verify'], CLI);
  assert.is(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /^ok: /);
  // The installed helper answers for this kernel (ABI 7 on these machines).
  assert.match(result.stdout, /\nnote: Landlock is ABI \d+: the workspace profile can be enforced here\n/);
});

test('a session through the installed units: output, exit status, and the session slice', async () => {
  const result = await sandbox.exec(agentArgv(['sh', '-c', 'echo hi; cat /proc/self/cgroup; exit 3']), { timeoutMs: 60_000 });
  assert.is(result.code, 3, result.stderr + (await sandbox.journal()).slice(-3000));
  assert.match(result.stdout, /^hi\r\n/);
  // A top-level slice: the name has no dash to nest it in another (systemd.slice(5)).
  assert.match(result.stdout, /0::\/opencode_pty_sessions\.slice\/opencode-pty-session-[0-9a-f]{32}\.service/);
});

test('status shows a live session; stop ends it and its client hears the end', async () => {
  const client = sandbox.spawn(agentArgv(['sleep', '600']));
  const exited = new Promise<number | null>((resolve) => client.on('exit', (code) => resolve(code)));
  const now = await untilSessions(1);
  assert.is(now.installed, true);
  assert.match(now.socket.state, /^active/);
  assert.is(now.socket.mode, '0660');
  assert.is(now.socket.group, 'opencode-pty');
  assert.match(now.broker.state, /^active/);
  assert.ok(now.broker.mainPid > 0);
  // The broker's idle workers may each keep a warm unit: listed too, as warm, with no program or cwd.
  const [session, ...others] = [...now.sessions].sort((a: any, b: any) => Number(a.warm) - Number(b.warm));
  for (const warm of others) assert.equal([warm.warm, warm.program, warm.cwd], [true, null, null], JSON.stringify(now.sessions));
  assert.is(session.warm, false);
  assert.is(session.user, sandbox.client.user);
  assert.equal(session.program, ['sleep', '600']);
  assert.is(session.cwd, sandbox.client.home);
  assert.match(session.cpuNsec, /^\d+$/);
  // The sandbox has no memory or pids controller: unavailable, never "0".
  assert.is(session.memoryBytes, null);
  const stopped = await opencodePty(['stop', session.unit], CLI);
  assert.is(stopped.code, 0, stopped.stderr);
  // systemd sends SIGTERM and SIGHUP (SendSIGHUP=yes); whichever the kernel delivers first ends sleep.
  assert.ok([128 + 1, 128 + 15].includes((await exited)!), 'sleep killed by SIGHUP or SIGTERM');
  const unknown = await opencodePty(['stop', session.unit], CLI);
  assert.is(unknown.code, 4);
  assert.match(unknown.stderr, /no such live session/);
});

test('session end accounting reaches the journal with the session fields', async () => {
  const journal = await sandbox.exec(['journalctl', '--no-pager', '-o', 'json', 'OPENCODE_PTY_EVENT=session-end']);
  const entries = journal.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line));
  assert.ok(entries.length >= 2, journal.stdout + journal.stderr);
  const last = entries.at(-1);
  assert.match(last.SESSION_UNIT, /^opencode-pty-session-[0-9a-f]{32}\.service$/);
  assert.is(last.OBJECT_SYSTEMD_UNIT, last.SESSION_UNIT);
  assert.match(last.CPU_USAGE_NSEC, /^\d+$/);
  assert.is(last.MEMORY_CURRENT_BYTES, undefined, 'unavailable: not logged as zero');
  const story = await sandbox.exec(['journalctl', '--no-pager', '-o', 'cat', `SESSION_UNIT=${last.SESSION_UNIT}`]);
  assert.match(story.stdout, /session \S+ started for pid \d+: "sleep"/);
  assert.match(story.stdout, /session \S+ ended: /);
  assert.match(story.stdout, /session \S+ accounting: /);
  const byUnit = await sandbox.exec(['journalctl', '--no-pager', '-o', 'cat', '-u', last.SESSION_UNIT]);
  assert.match(byUnit.stdout, /session .* ended/, 'journalctl -u SESSION shows our lines beside systemd\'s');
});

test('verify names a tampered file and a changed mode; install repairs them', async () => {
  const now = await status();
  const dir = `/usr/lib/opencode-pty/${now.version}`;
  await sandbox.exec(['sh', '-c', `echo '// changed' >>${dir}/worker-main.cjs && chmod 0666 ${dir}/linux-x64/opencode_pty.node`]);
  const result = await opencodePty(['verify'], CLI);
  assert.is(result.code, 4);
  assert.match(result.stdout, new RegExp(`differs: ${dir}/worker-main\\.cjs: content differs`));
  assert.match(result.stdout, new RegExp(`differs: ${dir}/linux-x64/opencode_pty\\.node: mode 0666, expected 0644`));
  const repair = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT]);
  assert.is(repair.code, 0, repair.stderr);
  assert.is((await opencodePty(['verify'], CLI)).code, 0);
});

test('upgrade while a session runs: the busy broker keeps its directory and spawns workers from it; an idle one is restarted', async () => {
  const old = (await status()).version;
  // One session now; a second one from the same agent once the test writes into the fifo (after the upgrade).
  const fifo = `${sandbox.client.home}/second-session`;
  await sandbox.exec(['mkfifo', fifo], { as: 'client' });
  const sleeper = `/usr/bin/node ${CLI} run -- sleep 600`;
  const client = sandbox.spawn(agentShell(`${sleeper} & read go <${fifo}; ${sleeper} & wait`));
  const exited = new Promise<number | null>((resolve) => client.on('exit', (code) => resolve(code)));
  const before = await untilSessions(1);
  await copyBundle('/opt/opencode-pty-build-2', (text) => text.replace('"version": "0.1.0"', '"version": "0.1.1"'));
  const upgrade = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT], '/opt/opencode-pty-build-2/cli.js');
  assert.is(upgrade.code, 0, upgrade.stderr);
  assert.match(upgrade.stdout, /keeps running/);
  const after = await status();
  assert.match(after.version, /^0\.1\.1-/);
  assert.is(after.broker.mainPid, before.broker.mainPid, 'the busy broker was not restarted');
  // A session started after the upgrade is served by the same broker, with a worker (and a new spare) from its directory.
  await sandbox.exec(['sh', '-c', `echo go >${fifo}`]);
  await untilSessions(2);
  // Every process of the broker's unit (broker, workers, the spare) runs from the old directory.
  const cgroup = await sandbox.exec(['sh', '-c', `for p in $(cat /sys/fs/cgroup$(systemctl show -P ControlGroup opencode-pty-supervisor@broker.service)/cgroup.procs); do tr '\\0' ' ' </proc/$p/cmdline; echo; done`]);
  assert.ok(cgroup.stdout.trim().split('\n').length >= 4, `broker, two workers and a spare:\n${cgroup.stdout}${cgroup.stderr}`);
  for (const line of cgroup.stdout.trim().split('\n')) assert.ok(line.includes(`/usr/lib/opencode-pty/${old}/`), line);
  assert.is((await sandbox.exec(['test', '-d', `/usr/lib/opencode-pty/${old}`])).code, 0, 'the old directory stays while used');
  await opencodePty(['stop', '--all'], CLI);
  await exited;
  const again = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT], '/opt/opencode-pty-build-2/cli.js');
  assert.is(again.code, 0, again.stderr);
  assert.is((await sandbox.exec(['test', '-d', `/usr/lib/opencode-pty/${old}`])).code, 1, 'the old directory is pruned once the broker is idle');
  const session = await sandbox.exec(agentArgv(['sh', '-c', 'exit 5']), { timeoutMs: 60_000 });
  assert.is(session.code, 5, session.stderr);
  assert.is((await opencodePty(['verify', '--manifest', '/opt/opencode-pty-build-2'], CLI)).code, 0);
});

test('uninstall ends live sessions and leaves nothing behind but the config; --purge takes that too', async () => {
  const client = sandbox.spawn(agentArgv(['sleep', '600']));
  const exited = new Promise<number | null>((resolve) => client.on('exit', (code) => resolve(code)));
  await untilSessions(1);
  const result = await opencodePty(['uninstall'], CLI.replace('current', (await status()).version));
  assert.is(result.code, 0, result.stderr + result.stdout);
  assert.ok((await exited) !== null);
  const left = await sandbox.exec(['sh', '-c', `ls -A /usr/lib/opencode-pty; ls -A /etc/opencode-pty; ls -A /etc/systemd/system | grep -i opencode; getent group opencode-pty; systemctl list-units --all --plain --no-legend 'opencode-pty*' | grep -v '^opencode-pty-test.target'; test -e /run/opencode-pty/supervisor.sock && echo socket`]);
  assert.is(left.stdout, 'README\nconfig.json\n');
  const purge = await opencodePty(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT]);
  assert.is(purge.code, 0, purge.stderr);
  assert.match(purge.stdout, /kept the existing \/etc\/opencode-pty\/config\.json/);
  const removed = await opencodePty(['uninstall', '--purge'], `${BUILD}/cli.js`);
  assert.is(removed.code, 0, removed.stderr);
  const none = await sandbox.exec(['sh', '-c', 'ls -A /usr/lib/opencode-pty /etc/opencode-pty; getent group opencode-pty; ls /etc/systemd/system | grep opencode']);
  assert.is(none.stdout, '/etc/opencode-pty:\n\n/usr/lib/opencode-pty:\n');
  const again = await opencodePty(['uninstall']);
  assert.is(again.code, 4);
});

test.run();
