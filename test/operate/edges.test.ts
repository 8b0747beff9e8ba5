// The edges an operator met in a first hour: a second install for another account, --purge after a
// plain uninstall, status with nothing installed or a unit file gone, and a manifest that would make
// the root-owned copy write outside the package or hand out setuid/world-writable files.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStatus } from '../../src/cli/status.ts';
import type { CommandContext } from '../../src/cli/context.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { applyStep } from '../../src/operate/apply.ts';
import { describeStep, planInstall, type Accounts, type Bundle, type Existing, type InstallOptions } from '../../src/operate/install-plan.ts';
import { DEFAULT_LAYOUT, paths, type InstallRecord } from '../../src/operate/layout.ts';
import { artifactProblems, parseManifest, sha256, type BuildManifest } from '../../src/operate/manifest.ts';
import { packageDirProblems, type HostFacts } from '../../src/operate/requirements.ts';
import { dirChain } from '../../src/operate/probe.ts';
import { planUninstall } from '../../src/operate/uninstall-plan.ts';

const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-edges-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const manifestOf = (artifacts: BuildManifest['artifacts']): BuildManifest => ({ name: 'opencode-pty-supervisor', version: '1.0.0', node: '>=20', sources: 'ab'.repeat(32), artifacts });
const ok = { sha256: 'c'.repeat(64), mode: '0644' };
const bundleOf = (manifest: BuildManifest): Bundle => ({ dir: '/pkg/dist', manifest, manifestText: JSON.stringify(manifest), socketTemplate: '[Socket]\nListenStream=/run/opencode-pty/supervisor.sock\n', serviceTemplate: '[Service]\nEnvironment=OPENCODE_PTY_CONFIG=/etc/opencode-pty/config.json\nExecStart=/usr/bin/node /usr/lib/opencode-pty/broker.cjs\n' });
const host: HostFacts = { euid: 0, systemdVersion: 252, systemdRunning: true, kernel: '6.1.0-18-amd64', node: { path: '/usr/bin/node', version: 'v20.11.1', chain: [{ path: '/usr/bin/node', uid: 0, mode: 0o755 }] }, cgroups: { root: 'cgroup2', hybridUnified: false, controllers: ['memory', 'pids'], v1Controllers: [] } };
const options: InstallOptions = { clientUser: 'opencode', clientGroup: undefined, clientUnit: 'opencode.service', socketGroup: 'opencode-pty', layout: DEFAULT_LAYOUT, unitPrefix: 'opencode-pty-' };
const accounts: Accounts = {
  user: (name) => (name === 'opencode' || name === 'other' ? { uid: name === 'opencode' ? 990 : 991, gid: 990 } : undefined),
  group: (name) => (name === 'opencode' ? { gid: 990, members: [] } : undefined),
  groupName: (gid) => (gid === 990 ? 'opencode' : undefined),
};
const fresh = (overrides: Partial<Existing> = {}): Existing => ({ file: () => undefined, isDir: () => false, link: () => undefined, record: undefined, socketEnabled: false, socketActive: false, brokerActive: false, brokerDir: undefined, liveSessions: [], ...overrides });
const record = (overrides: Partial<InstallRecord> = {}): InstallRecord => ({ format: 1, current: '1.0.0-x', versions: ['1.0.0-x'], files: {}, dirs: [], createdGroup: null, clientUnit: 'opencode.service', clientUser: 'opencode', socketGroup: 'opencode-pty', nodePath: '/usr/bin/node', unitPrefix: 'opencode-pty-', ...overrides });

test('install for another --client-user is refused as another --client-unit is; the record keeps the account', () => {
  const bundle = bundleOf(manifestOf({ 'cli.js': ok }));
  const refused = planInstall({ ...options, clientUser: 'other' }, bundle, host, accounts, fresh({ record: record() }));
  assert.ok(refused.refusals.includes('installed for the account opencode; uninstall first to change --client-user'), refused.refusals.join('\n'));
  assert.equal(refused.steps, []);
  const same = planInstall(options, bundle, host, accounts, fresh({ record: record() }));
  assert.equal(same.refusals.filter((r) => r.includes('--client-user')), []);
  const written = same.steps.find((s) => s.step.op === 'write' && s.step.path.endsWith('installed.json'))!.step as { content: string };
  assert.is(JSON.parse(written.content).clientUser, 'opencode');
});

test('install says so when the client unit does not exist yet, and how to create it; not when it does', () => {
  const bundle = bundleOf(manifestOf({ 'cli.js': ok }));
  const missing = planInstall(options, bundle, host, accounts, fresh({ unitLoadState: (unit) => (unit === 'opencode.service' ? 'not-found' : 'loaded') }));
  const note = missing.notes.find((n) => n.startsWith('opencode.service does not exist yet'));
  assert.ok(note, missing.notes.join('\n'));
  assert.match(note!, 'examples/opencode.service');
  assert.match(note!, 'systemctl daemon-reload && systemctl enable --now opencode.service');
  const present = planInstall(options, bundle, host, accounts, fresh({ unitLoadState: () => 'loaded' }));
  assert.not.ok(present.notes.some((n) => n.includes('does not exist')));
  assert.ok(present.notes.some((n) => n.startsWith('restart opencode.service')));
});

test("the plan counts the build's files as verify does, and lists the install record once", () => {
  const bundle = bundleOf(manifestOf({ 'cli.js': ok, 'linux-x64/opencode_pty.node': ok, 'units/x.socket': ok }));
  const plan = planInstall(options, bundle, host, accounts, fresh());
  const lines = plan.steps.map((s) => describeStep(s.step));
  // verify says "ok: N files of …" with N the manifest's artifacts.
  assert.ok(lines.some((l) => l.startsWith(`install ${Object.keys(bundle.manifest.artifacts).length} files and manifest.json from`)), lines.join('\n'));
  assert.is(lines.filter((l) => l.includes('installed.json')).length, 1);
});

test('artifact paths that leave the package and modes with setuid, setgid or world-write are refused', () => {
  const bad = manifestOf({
    '../escape': ok,
    '/etc/passwd': ok,
    'a/../../b': ok,
    'suid': { sha256: ok.sha256, mode: '4755' },
    'sgid': { sha256: ok.sha256, mode: '2755' },
    'open': { sha256: ok.sha256, mode: '0666' },
    'fine/inside.node': ok,
  });
  const problems = artifactProblems(bad);
  assert.is(problems.length, 6, problems.join('\n'));
  for (const word of ['"../escape"', '"/etc/passwd"', '"a/../../b"', '4755 has setuid', '2755 has setuid or setgid', '0666 is writable by others']) {
    assert.ok(problems.some((p) => p.includes(word)), word);
  }
  const plan = planInstall(options, bundleOf(bad), host, accounts, fresh());
  assert.equal(plan.steps, [], 'nothing is done');
  assert.ok(plan.refusals.length >= 6);
  assert.equal(artifactProblems(parseManifest(JSON.stringify(manifestOf({ 'linux-x64/opencode-pty-session': { sha256: ok.sha256, mode: '0711' } })))), []);
});

test('the copy refuses a symlink in the package (O_NOFOLLOW), and a directory that leads out of it', () => {
  const from = join(dir, 'pkg');
  mkdirSync(join(from, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'outside'), 'secret');
  symlinkSync(join(dir, 'outside'), join(from, 'link'));
  symlinkSync(dir, join(from, 'up'));
  for (const path of ['link', 'up/outside']) {
    const step = { op: 'bundle' as const, from, to: join(dir, `to-${path.replace('/', '-')}`), files: [{ path, mode: 0o644, sha256: sha256('secret') }] };
    assert.throws(() => applyStep(step, () => ({ code: 0, stdout: '', stderr: '' })), /ELOOP|leads out/);
  }
});

test('root refuses a package directory another account owns or can write, up to /; a sticky /tmp is fine', () => {
  const chain = (entries: [string, number, number][]) => entries.map(([path, uid, mode]) => ({ path, uid, mode }));
  assert.equal(packageDirProblems(chain([['/usr/lib/node_modules/p/dist', 0, 0o755], ['/usr/lib/node_modules/p', 0, 0o755], ['/', 0, 0o755]])), []);
  assert.equal(packageDirProblems(chain([['/tmp/p/dist', 0, 0o755], ['/tmp/p', 0, 0o755], ['/tmp', 0, 0o1777], ['/', 0, 0o755]])), []);
  const npx = packageDirProblems(chain([['/home/u/.npm/_npx/x/dist', 0, 0o755], ['/home/u/.npm', 1000, 0o755], ['/', 0, 0o755]]));
  assert.is(npx.length, 1);
  assert.match(npx[0]!, '/home/u/.npm is owned by uid 1000, not root');
  const open = packageDirProblems(chain([['/opt/p/dist', 0, 0o755], ['/opt/p', 0, 0o775], ['/', 0, 0o755]]));
  assert.match(open[0]!, '/opt/p is writable by group or others (mode 775)');
  // The real chain of a directory: every ancestor to /.
  const made = join(dir, 'chain', 'dist');
  mkdirSync(made, { recursive: true, mode: 0o755 });
  chmodSync(join(dir, 'chain'), 0o777);
  const real = dirChain(made);
  assert.is(real.at(-1)!.path, '/');
  assert.ok(packageDirProblems(real).some((p) => p.includes(`${join(dir, 'chain')} is writable by group or others (mode 777)`)));
});

test('uninstall --purge after a plain uninstall removes the kept config, its README and the directory if empty', () => {
  const layout = DEFAULT_LAYOUT;
  const kept = new Set([paths.config(layout), paths.configReadme(layout)]);
  const existing = fresh({ file: (p) => (kept.has(p) ? { sha256: 'x', mode: 0o644, uid: 0, gid: 0 } : undefined), isDir: (p) => p === layout.configDir });
  const purge = planUninstall({ layout, purge: true }, undefined, existing, 0);
  assert.equal(purge.refusals, []);
  assert.equal(
    purge.steps.map((s) => s.step),
    [
      { op: 'remove', path: paths.config(layout), recursive: false },
      { op: 'remove', path: paths.configReadme(layout), recursive: false },
      { op: 'remove', path: layout.configDir, recursive: false },
    ],
  );
  assert.ok(planUninstall({ layout, purge: false }, undefined, existing, 0).refusals[0]!.startsWith('nothing to uninstall'));
  assert.ok(planUninstall({ layout, purge: true }, undefined, fresh(), 0).refusals[0]!.startsWith('nothing to uninstall'), 'nothing left: still nothing to do');
});

function status(prefix: string): { code: number; stdout: string } {
  let stdout = '';
  const context: CommandContext = { stdout: (t) => (stdout += t), stderr: (t) => (stdout += t), run: () => ({ code: 0, stdout: '', stderr: '' }), bundleDir: '/nonexistent' };
  return { code: runStatus(['--prefix', prefix], context), stdout };
}

test('status with nothing installed says "not installed" (exit 4), not a blank socket line', () => {
  const result = status(join(dir, 'nothing'));
  assert.is(result.code, EXIT.DIFFERS);
  assert.match(result.stdout, /^not installed \(no install record at .*installed\.json\); install with: opencode-ptyctl install/);
});

test('status notices a unit file install wrote and someone removed (exit 4)', () => {
  const prefix = join(dir, 'lib');
  mkdirSync(prefix);
  const present = join(dir, 'present.socket');
  writeFileSync(present, '[Socket]\n');
  const gone = join(dir, 'gone.socket');
  writeFileSync(join(prefix, 'installed.json'), JSON.stringify(record({ files: { [present]: 'x', [gone]: 'y' } })));
  const result = status(prefix);
  assert.is(result.code, EXIT.DIFFERS);
  assert.match(result.stdout, `missing: ${gone} (install wrote it`);
  assert.not.match(result.stdout, `missing: ${present}`);
});

test.run();
