// The install and uninstall plans as pure functions over facts: refusals, idempotence, upgrades.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { describeStep, planInstall, type Accounts, type Bundle, type Existing, type InstallOptions, type Plan } from '../../src/operate/install-plan.ts';
import { DEFAULT_LAYOUT, type InstallRecord } from '../../src/operate/layout.ts';
import { sha256, versionName, type FileFacts } from '../../src/operate/manifest.ts';
import type { HostFacts } from '../../src/operate/requirements.ts';
import { planUninstall } from '../../src/operate/uninstall-plan.ts';

const manifestText = JSON.stringify({ name: 'opencode-pty-supervisor', version: '1.0.0', node: '>=20', sources: 'ab'.repeat(32), artifacts: { 'broker.js': { sha256: 'b'.repeat(64), mode: '0755' }, 'opencode-pty-session': { sha256: 'c'.repeat(64), mode: '0711' } } });
const bundle: Bundle = {
  dir: '/src/dist',
  manifest: JSON.parse(manifestText),
  manifestText,
  socketTemplate: '[Socket]\nListenStream=/run/opencode-pty/supervisor.sock\n',
  serviceTemplate: '[Service]\nEnvironment=OPENCODE_PTY_CONFIG=/etc/opencode-pty/config.json\nExecStart=/usr/bin/node /usr/lib/opencode-pty/broker.cjs\n',
};
const version = versionName(manifestText, bundle.manifest);
const host: HostFacts = {
  euid: 0,
  systemdVersion: 252,
  systemdRunning: true,
  kernel: '6.1.0-18-amd64',
  node: { path: '/usr/local/bin/node', version: 'v20.11.1', chain: [{ path: '/usr/local/bin/node', uid: 0, mode: 0o755 }] },
  cgroups: { root: 'cgroup2', hybridUnified: false, controllers: ['cpu', 'io', 'memory', 'pids'], v1Controllers: [] },
};
const options: InstallOptions = { clientUser: 'opencode', clientGroup: undefined, clientUnit: 'opencode.service', socketGroup: 'opencode-pty', layout: DEFAULT_LAYOUT, unitPrefix: 'opencode-pty-' };

function accounts(groups: Record<string, { gid: number; members: string[] }> = { opencode: { gid: 990, members: [] } }): Accounts {
  return {
    user: (name) => (name === 'opencode' ? { uid: 990, gid: 990 } : name === 'root' ? { uid: 0, gid: 0 } : undefined),
    group: (name) => groups[name],
    groupName: (gid) => Object.entries(groups).find(([, g]) => g.gid === gid)?.[0],
  };
}

function fresh(overrides: Partial<Existing> = {}): Existing {
  return { file: () => undefined, isDir: () => false, link: () => undefined, record: undefined, socketEnabled: false, socketActive: false, brokerActive: false, brokerDir: undefined, liveSessions: [], ...overrides };
}

/** The host after `plan` ran: every written file and bundle file present with what was planned. */
function after(plan: Plan, overrides: Partial<Existing> = {}): Existing {
  const files = new Map<string, FileFacts>();
  const dirs = new Set<string>();
  let link: string | undefined;
  let record: InstallRecord | undefined;
  for (const { step } of plan.steps) {
    if (step.op === 'write') files.set(step.path, { sha256: sha256(step.content), mode: step.mode, uid: 0, gid: 0 });
    if (step.op === 'write' && step.path.endsWith('installed.json')) record = JSON.parse(step.content);
    if (step.op === 'bundle') for (const f of step.files) files.set(`${step.to}/${f.path}`, { sha256: f.sha256, mode: f.mode, uid: 0, gid: 0 });
    if (step.op === 'mkdir') dirs.add(step.path);
    if (step.op === 'link') link = step.target;
  }
  return fresh({ file: (p) => files.get(p), isDir: (p) => dirs.has(p) || p.includes('/usr/lib/opencode-pty/'), link: () => link, record, socketEnabled: true, socketActive: true, ...overrides });
}

const changed = (plan: Plan) => plan.steps.filter((s) => s.change).map((s) => describeStep(s.step));
const withSocketGroup = () => accounts({ opencode: { gid: 990, members: [] }, 'opencode-pty': { gid: 991, members: [] } });

test('a fresh host: group, bundle, config, units, reload, socket enabled and started', () => {
  const plan = planInstall(options, bundle, host, accounts(), fresh());
  assert.equal(plan.refusals, []);
  const lines = changed(plan);
  assert.is(lines[0], 'groupadd --system opencode-pty');
  assert.ok(lines.some((l) => l.startsWith(`install 2 files and manifest.json from /src/dist to /usr/lib/opencode-pty/${version}`)));
  const unit = plan.steps.find((s) => s.step.op === 'write' && s.step.path.endsWith('supervisor@.service'))!.step as { content: string };
  assert.match(unit.content, new RegExp(`^ExecStart=/usr/local/bin/node /usr/lib/opencode-pty/${version}/broker\\.cjs$`, 'm'));
  const dropIn = plan.steps.find((s) => s.step.op === 'write' && s.step.path === '/etc/systemd/system/opencode.service.d/opencode-pty-socket.conf')!.step as { content: string };
  assert.match(dropIn.content, /^\[Service\]\nSupplementaryGroups=opencode-pty$/m);
  assert.ok(lines.includes('systemctl daemon-reload'));
  assert.ok(lines.includes('systemctl enable opencode-pty-supervisor.socket'));
  assert.ok(lines.includes('systemctl start opencode-pty-supervisor.socket'));
  assert.ok(plan.notes.some((n) => n.includes('SO_PEERPIDFD')), 'a 6.1 kernel gets the fallback note');
});

test('a second run with nothing new changes nothing', () => {
  const first = planInstall(options, bundle, host, withSocketGroup(), fresh());
  const second = planInstall(options, bundle, host, withSocketGroup(), after(first));
  assert.equal(changed(second), []);
});

test('refusals name what is wrong and plan nothing', () => {
  const cases: [Partial<HostFacts>, RegExp][] = [
    [{ euid: 1000 }, /must run as root/],
    [{ systemdVersion: 247 }, /systemd 247 is older than the minimum 252/],
    [{ systemdRunning: false }, /not running as PID 1/],
    [{ kernel: '5.4.0' }, /kernel 5\.4\.0 is older than the minimum 5\.9/],
    [{ node: { path: '/usr/bin/node', version: 'v18.19.0', chain: [] } }, /Node v18\.19\.0 at \/usr\/bin\/node does not satisfy >=20 \(Debian 12 ships Node 18/],
    [{ node: { path: '/opt/node', version: 'v20.1.0', chain: [{ path: '/opt/node', uid: 1000, mode: 0o775 }] } }, /\/opt\/node is owned by uid 1000, not root.*|writable by group/],
  ];
  for (const [facts, message] of cases) {
    const plan = planInstall(options, bundle, { ...host, ...facts }, accounts(), fresh());
    assert.match(plan.refusals.join('\n'), message);
    assert.equal(plan.steps, []);
  }
});

test('the client account may not be root, nor a member of the socket group', () => {
  assert.match(planInstall({ ...options, clientUser: 'root', clientGroup: 'opencode' }, bundle, host, accounts(), fresh()).refusals.join(), /must not be root/);
  assert.match(planInstall({ ...options, clientUser: 'nobody' }, bundle, host, accounts(), fresh()).refusals.join(), /no such account "nobody"/);
  const member = accounts({ opencode: { gid: 990, members: [] }, 'opencode-pty': { gid: 991, members: ['opencode'] } });
  assert.match(planInstall(options, bundle, host, member, fresh()).refusals.join(), /opencode is a member of the socket group opencode-pty in \/etc\/group/);
  assert.match(planInstall({ ...options, socketGroup: 'opencode' }, bundle, host, accounts(), fresh()).refusals.join(), /must not be the client's own group/);
});

test('upgrade under a busy broker: new directory and unit, the broker and its directory stay', () => {
  const first = planInstall(options, bundle, host, withSocketGroup(), fresh());
  const oldDir = `/usr/lib/opencode-pty/${version}`;
  const nextText = manifestText.replace('1.0.0', '1.0.1');
  const next: Bundle = { ...bundle, manifestText: nextText, manifest: JSON.parse(nextText) };
  const busy = planInstall(options, next, host, withSocketGroup(), after(first, { brokerActive: true, brokerDir: oldDir, liveSessions: ['opencode-pty-session-1.service'] }));
  const lines = changed(busy);
  assert.ok(lines.some((l) => l.startsWith(`ln -s ${versionName(nextText, next.manifest)}`)));
  assert.not.ok(lines.includes('systemctl stop opencode-pty-supervisor@broker.service'));
  assert.not.ok(lines.some((l) => l.startsWith(`remove ${oldDir}`)));
  assert.ok(busy.notes.some((n) => n.includes('keeps running')));
  const idle = planInstall(options, next, host, withSocketGroup(), after(first, { brokerActive: true, brokerDir: oldDir }));
  assert.ok(changed(idle).includes('systemctl stop opencode-pty-supervisor@broker.service'));
  assert.ok(changed(idle).includes(`remove ${oldDir} and everything below it`));
  // A broker with only idle warm units is idle: restarted, so it runs the new Node and bundle.
  const warmOnly = planInstall(options, next, host, withSocketGroup(), after(first, { brokerActive: true, brokerDir: oldDir, warmUnits: ['opencode-pty-session-2.service'] }));
  assert.ok(changed(warmOnly).includes('systemctl stop opencode-pty-supervisor@broker.service'));
  assert.not.ok(warmOnly.notes.some((n) => n.includes('keeps running')));
});

test('a tampered bundle file is reinstalled; an edited config is kept', () => {
  const first = planInstall(options, bundle, host, withSocketGroup(), fresh());
  const base = after(first);
  const tampered = { ...base, file: (p: string) => (p.endsWith('/broker.js') ? { sha256: '0'.repeat(64), mode: 0o755, uid: 0, gid: 0 } : p.endsWith('config.json') ? { sha256: 'edited', mode: 0o644, uid: 0, gid: 0 } : base.file(p)) };
  const plan = planInstall(options, bundle, host, withSocketGroup(), tampered);
  assert.ok(changed(plan).some((l) => l.startsWith('install 2 files and manifest.json')));
  assert.not.ok(changed(plan).some((l) => l.startsWith('write /etc/opencode-pty/config.json')));
  assert.ok(plan.notes.includes('kept the existing /etc/opencode-pty/config.json'));
});

test('uninstall: refuses without a record; stops first, removes what the record lists, keeps the config', () => {
  assert.match(planUninstall({ layout: DEFAULT_LAYOUT, purge: false }, undefined, fresh(), 0).refusals.join(), /no install record/);
  const first = planInstall(options, bundle, host, accounts(), fresh());
  const installed = after(first, { liveSessions: ['opencode-pty-session-1.service'], brokerActive: true });
  const plan = planUninstall({ layout: DEFAULT_LAYOUT, purge: false }, installed.record, installed, 0);
  const lines = changed(plan);
  assert.is(lines[0], 'systemctl stop opencode-pty-supervisor.socket');
  assert.ok(lines.indexOf('stop and wait for 1 session unit(s): opencode-pty-session-1.service') < lines.findIndex((l) => l.startsWith('remove')));
  assert.ok(lines.includes(`remove /usr/lib/opencode-pty/${version} and everything below it`));
  assert.ok(lines.includes('remove /etc/systemd/system/opencode.service.d/opencode-pty-socket.conf'));
  assert.ok(lines.includes('groupdel opencode-pty'));
  assert.not.ok(lines.some((l) => l.includes('config.json')));
  assert.ok(changed(planUninstall({ layout: DEFAULT_LAYOUT, purge: true }, installed.record, installed, 0)).includes('remove /etc/opencode-pty/config.json'));
  assert.is(lines.at(-1), 'systemctl daemon-reload');
  // An idle warm unit is stopped too (after the socket, whose stop stops the broker): nothing is left.
  const warm = changed(planUninstall({ layout: DEFAULT_LAYOUT, purge: false }, installed.record, { ...installed, warmUnits: ['opencode-pty-session-2.service'] }, 0));
  assert.ok(warm.includes('stop and wait for 2 session unit(s): opencode-pty-session-1.service, opencode-pty-session-2.service'), warm.join('\n'));
  const onlyWarm = changed(planUninstall({ layout: DEFAULT_LAYOUT, purge: false }, installed.record, { ...installed, liveSessions: [], warmUnits: ['opencode-pty-session-2.service'] }, 0));
  assert.ok(onlyWarm.some((l) => l.startsWith('stop and wait for 1 session unit(s): opencode-pty-session-2.service')), onlyWarm.join('\n'));
  // Kept sessions' sockets and records go too, after their units and the broker are stopped.
  const kept = { ...installed, isDir: (path: string) => path === '/run/opencode-pty-kept' || installed.isDir(path) };
  const withKept = changed(planUninstall({ layout: DEFAULT_LAYOUT, purge: false }, installed.record, kept, 0));
  const removeKept = withKept.indexOf('remove /run/opencode-pty-kept and everything below it');
  assert.ok(removeKept > withKept.indexOf('systemctl stop opencode-pty-supervisor@broker.service'), withKept.join('\n'));
  assert.not.ok(lines.some((l) => l.includes('opencode-pty-kept')), 'nothing to remove when it is not there');
});

test.run();
