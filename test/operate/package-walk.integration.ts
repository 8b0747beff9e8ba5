// The README's operator steps, literally, from the packed package: `npm install -g` of the tarball with
// no compiler on PATH into the sandbox, `opencode-ptyctl install` with the agent running (status and
// verify warn until it is restarted), a session from the agent's unit, status, verify,
// `uninstall --purge`, and the host back as it was (no units, slices, group, files or socket of ours).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../sandbox/index.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const AGENT = 'opencode-pty-agent.service';
/** Where npm puts the global package and its command link inside the sandbox. */
const PREFIX = '/opt/npm-global';
const COMMAND = `${PREFIX}/bin/opencode-ptyctl`;
/** A PATH with node and a shell, and no make, cc or g++. */
const BARE_BIN = '/opt/bare-bin';
const NPM_CLI = '/usr/lib/node_modules/npm/bin/npm-cli.js';
let sandbox: Sandbox;
const packDir = mkdtempSync(join(tmpdir(), 'opencode-pty-walk-'));
const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
/** The newer build the upgrade step installs: the same files, one patch version up (package.json and manifest). */
const NEXT_VERSION = VERSION.replace(/\d+$/, (patch) => String(Number(patch) + 1));

/** The packed tarball again with its version bumped, as a newer build's `npm pack` would carry it. */
function packNext(tarball: string): string {
  const unpacked = join(packDir, 'next');
  mkdirSync(unpacked);
  const tar = (args: string[]) => {
    const ran = spawnSync('tar', args, { encoding: 'utf8' });
    if (ran.status !== 0) throw new Error(ran.stderr);
  };
  tar(['-xzf', tarball, '-C', unpacked]);
  for (const file of ['package/package.json', 'package/dist/manifest.json']) {
    const path = join(unpacked, file);
    const json = JSON.parse(readFileSync(path, 'utf8')) as { version: string };
    json.version = NEXT_VERSION;
    writeFileSync(path, `${JSON.stringify(json, null, 2)}\n`);
  }
  const next = join(packDir, `next-${NEXT_VERSION}.tgz`);
  tar(['-czf', next, '-C', unpacked, 'package']);
  return next;
}

/** What a host holds of ours: units, slices, the group, the files, the socket. */
async function snapshot(): Promise<string> {
  const listed = await sandbox.exec([
    'sh',
    '-c',
    [
      "systemctl list-units --all --plain --no-legend 'opencode*' 'system-opencode*' | awk '{print $1}' | sort",
      'ls /etc/systemd/system | grep -i opencode | sort',
      'getent group opencode-pty || true',
      'ls -A /usr/lib/opencode-pty /etc/opencode-pty 2>/dev/null || true',
      'ls -A /run/opencode-pty',
    ].join('; echo --; '),
  ]);
  return listed.stdout;
}

/** An operator's PATH: npm's global bin on it (where `npm install -g` links the command), no compiler. */
const OPERATOR_PATH = `${PREFIX}/bin:${BARE_BIN}:/usr/sbin:/usr/bin:/sbin:/bin`;
/** `npm install -g` of a tarball in the sandbox, with no compiler on PATH (and no network: --offline). */
const npmInstallGlobal = (tarball: string) =>
  sandbox.exec(['/usr/bin/node', NPM_CLI, 'install', '-g', '--prefix', PREFIX, '--offline', '--no-audit', '--no-fund', tarball], {
    timeoutMs: 120_000,
    env: { PATH: BARE_BIN, HOME: '/root', npm_config_cache: '/tmp/npm-cache' },
  });

/** Live session units, from the installed command's status (polled: status reads systemd's state); an
 * idle worker's warm unit is listed too, marked warm, and is no session. */
async function untilSessions(count: number): Promise<void> {
  let seen = -1;
  for (let i = 0; i < 200; i++) {
    const status = await ptyctl(['status', '--json']);
    seen = (JSON.parse(status.stdout) as { sessions: { state: string; warm: boolean }[] }).sessions.filter((s) => s.state === 'active' && !s.warm).length;
    if (seen === count) return;
  }
  throw new Error(`never saw ${count} live session(s) (last: ${seen})`);
}

const ptyctl = (args: string[]) => sandbox.exec([COMMAND, ...args], { timeoutMs: 120_000, env: { PATH: OPERATOR_PATH } });

test.before(async () => {
  const reason = sandboxUnavailable();
  if (reason) throw new Error(reason);
  const packed = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packDir], { cwd: root, encoding: 'utf8' });
  if (packed.status !== 0) throw new Error(packed.stderr);
  sandbox = await bootSandbox({ name: 'operate-package-walk' });
  const tarball = readdirSync(packDir).find((name) => name.endsWith('.tgz'))!;
  const next = packNext(join(packDir, tarball));
  await sandbox.install([
    { from: join(packDir, tarball), to: '/opt/package.tgz', mode: 0o644 },
    { from: next, to: '/opt/package-next.tgz', mode: 0o644 },
  ]);
  // A fresh host: the socket group does not exist yet (the sandbox seeds it for the other suites).
  const fresh = await sandbox.exec(['sh', '-c', `groupdel opencode-pty && mkdir -p ${BARE_BIN} && ln -s /usr/bin/node ${BARE_BIN}/node && ln -s /bin/sh ${BARE_BIN}/sh`]);
  if (fresh.code !== 0) throw new Error(fresh.stderr);
});

test.after(async () => {
  await sandbox?.stop();
  rmSync(packDir, { recursive: true, force: true });
});

test('npm install -g, install, a session from the agent unit, status, verify, uninstall --purge: the host as before', async () => {
  const before = await snapshot();
  // 1. npm install -g with no compiler on PATH (the sandbox has no network: --offline).
  const started = Date.now();
  const npm = await npmInstallGlobal('/opt/package.tgz');
  assert.is(npm.code, 0, npm.stderr);
  process.stdout.write(`# npm install -g in the sandbox: ${Date.now() - started} ms\n`);
  assert.is((await sandbox.exec(['sh', '-c', `PATH=${BARE_BIN} command -v cc make g++ || echo none`])).stdout, 'none\n');
  assert.is((await sandbox.exec(['test', '-e', `${PREFIX}/bin/opencode-pty`])).code, 1, 'no opencode-pty command: that is opencode\'s daemon');

  // 2. install, as the README says, with the agent already running (it lacks the group until restarted).
  const agentArgv = ['systemd-run', '--quiet', '--collect', `--unit=${AGENT}`, '--service-type=exec', `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, '--', '/bin/sleep', '600'];
  assert.is((await sandbox.exec(agentArgv)).code, 0);
  const install = await ptyctl(['install', '--client-user', sandbox.client.user, '--client-unit', AGENT]);
  assert.is(install.code, 0, install.stderr);
  assert.match(install.stdout, `note: restart ${AGENT}`);
  // The sandbox's unified tree offers no memory or pids controller (its host keeps them on v1).
  assert.match(install.stdout, /^warning: opencode_pty_sessions\.slice: MemoryMax= \(memory\) and TasksMax= \(pids\) are not enforced/m);
  assert.match(install.stdout, 'Check it with: opencode-ptyctl verify && opencode-ptyctl status\n');
  assert.not.match(install.stdout, 'is not on PATH');
  // The next steps it printed run as printed, on the operator's PATH.
  const next = await sandbox.exec(['sh', '-c', /Check it with: (.*)$/m.exec(install.stdout)![1]!], { timeoutMs: 120_000, env: { PATH: OPERATOR_PATH } });
  assert.is(next.code, 0, next.stdout + next.stderr);
  // status and verify read the running process's groups, not the unit's SupplementaryGroups=.
  const stale = await ptyctl(['status']);
  assert.match(stale.stdout, `warning: ${AGENT} (MainPID`);
  assert.match(stale.stdout, 'runs without the socket group opencode-pty');
  assert.match((await ptyctl(['verify'])).stdout, `systemctl restart ${AGENT}`);
  assert.is((await sandbox.exec(['systemctl', 'restart', AGENT])).code, 0);
  assert.not.match((await ptyctl(['status'])).stdout, 'runs without the socket group', 'a restart gave it the group');
  assert.is((await sandbox.exec(['systemctl', 'stop', AGENT])).code, 0);

  // 3. A session from the agent's unit (a transient one here, named as --client-unit).
  const session = await sandbox.exec(
    ['systemd-run', '--quiet', '--wait', '--collect', '--pipe', `--unit=${AGENT}`, '--service-type=exec', `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--working-directory=${sandbox.client.home}`, '--', '/usr/bin/node', '/usr/lib/opencode-pty/current/cli.js', 'run', '--', 'sh', '-c', 'echo from-the-package; exit 5'],
    { timeoutMs: 60_000 },
  );
  assert.is(session.code, 5, session.stderr);
  assert.match(session.stdout, 'from-the-package');

  // 4. status and verify, as the installed command.
  const status = await ptyctl(['status']);
  assert.is(status.code, 0, status.stdout + status.stderr);
  const verify = await ptyctl(['verify']);
  assert.is(verify.code, 0, verify.stdout + verify.stderr);
  assert.match(verify.stdout, /^ok: \d+ files of opencode-pty-supervisor/);
  assert.match(verify.stdout, /^warning: opencode_pty_sessions\.slice: MemoryMax= \(memory\) and TasksMax= \(pids\) are not enforced/m);

  // 5. Upgrade, as the README says (npm i -g of the newer build, then its command's install with no
  //    options), while a session is live: the busy broker keeps its directory; the next install, once
  //    idle, removes it. The new build then serves.
  const oldDir = (await sandbox.exec(['readlink', '/usr/lib/opencode-pty/current'])).stdout.trim();
  assert.match(oldDir, new RegExp(`^${VERSION.replace(/\./g, '\\.')}-[0-9a-f]{12}$`));
  const held = ['systemd-run', '--quiet', '--collect', `--unit=${AGENT}`, '--service-type=exec', `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--working-directory=${sandbox.client.home}`, '--', '/bin/sh', '-c', 'sleep 600 | /usr/bin/node /usr/lib/opencode-pty/current/cli.js run -- sleep 600'];
  assert.is((await sandbox.exec(held)).code, 0);
  await untilSessions(1);
  const upgradeStarted = Date.now();
  const npmNext = await npmInstallGlobal('/opt/package-next.tgz');
  assert.is(npmNext.code, 0, npmNext.stderr);
  process.stdout.write(`# npm install -g of the newer build in the sandbox: ${Date.now() - upgradeStarted} ms\n`);
  assert.is((await ptyctl(['--version'])).stdout, `opencode-ptyctl ${NEXT_VERSION}\n`, 'npm replaced the package: its command is the new one');
  const upgrade = await ptyctl(['install']);
  assert.is(upgrade.code, 0, upgrade.stdout + upgrade.stderr);
  assert.match(upgrade.stdout, /serves 1 session\(s\) from .* it keeps running/);
  const newDir = (await sandbox.exec(['readlink', '/usr/lib/opencode-pty/current'])).stdout.trim();
  assert.match(newDir, new RegExp(`^${NEXT_VERSION.replace(/\./g, '\\.')}-[0-9a-f]{12}$`));
  assert.is((await sandbox.exec(['test', '-d', `/usr/lib/opencode-pty/${oldDir}`])).code, 0, 'the busy broker keeps its directory');
  assert.is((await sandbox.exec(['systemctl', 'stop', AGENT])).code, 0);
  await untilSessions(0);
  const again = await ptyctl(['install']);
  assert.is(again.code, 0, again.stdout + again.stderr);
  assert.is((await sandbox.exec(['test', '-e', `/usr/lib/opencode-pty/${oldDir}`])).code, 1, 'once idle, the next install removes the old directory');
  const recorded = JSON.parse((await sandbox.exec(['cat', '/usr/lib/opencode-pty/installed.json'])).stdout) as { versions: string[] };
  assert.equal(recorded.versions, [newDir]);
  // The new build serves: a session from the agent's unit, a broker started from the new directory.
  const upgraded = await sandbox.exec(
    ['systemd-run', '--quiet', '--wait', '--collect', '--pipe', `--unit=${AGENT}`, '--service-type=exec', `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--working-directory=${sandbox.client.home}`, '--', '/usr/bin/node', '/usr/lib/opencode-pty/current/cli.js', 'run', '--', 'sh', '-c', 'echo upgraded; exit 6'],
    { timeoutMs: 60_000 },
  );
  assert.is(upgraded.code, 6, upgraded.stderr);
  assert.match(upgraded.stdout, 'upgraded');
  const brokerPid = (await sandbox.exec(['systemctl', 'show', '--property=MainPID', '--value', 'opencode-pty-supervisor@broker.service'])).stdout.trim();
  assert.match((await sandbox.exec(['cat', `/proc/${brokerPid}/cmdline`])).stdout, `/usr/lib/opencode-pty/${newDir}/broker.cjs`);
  const verifyNext = await ptyctl(['verify']);
  assert.is(verifyNext.code, 0, verifyNext.stdout + verifyNext.stderr);
  assert.match(verifyNext.stdout, `files of opencode-pty-supervisor ${NEXT_VERSION} `);

  // 6. uninstall --purge, then the host holds nothing of ours.
  const uninstall = await ptyctl(['uninstall', '--purge']);
  assert.is(uninstall.code, 0, uninstall.stdout + uninstall.stderr);
  const notInstalled = await ptyctl(['status']);
  assert.is(notInstalled.code, 4);
  assert.match(notInstalled.stdout, /^not installed/);
  await sandbox.exec(['systemctl', 'reset-failed']);
  // Every slice gone too: the sessions slice nests in no other (no opencode.slice left behind).
  assert.is(await snapshot(), before);
});

test.run();
