// The cgroup layouts install and verify tell apart, each shown through an injected probe (the machine
// is not changed): unified is fine, hybrid (these machines: memory, pids and cpu on v1) installs with a
// warning that the sessions slice's MemoryMax=/TasksMax= are not enforced, legacy (v1 only) is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandContext } from '../../src/cli/context.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { runInstall } from '../../src/cli/install.ts';
import { runVerify } from '../../src/cli/verify.ts';
import { cgroupLayout, cgroupLimitWarning, cgroupProblem, FS_MAGIC, probeCgroups, type CgroupFacts, type CgroupReader } from '../../src/operate/cgroups.ts';
import { planInstall, type Accounts, type Bundle, type Existing } from '../../src/operate/install-plan.ts';
import { DEFAULT_LAYOUT, SESSIONS_SLICE } from '../../src/operate/layout.ts';
import type { HostFacts } from '../../src/operate/requirements.ts';

/** A host's /sys/fs/cgroup as statfs types and files. */
function reader(types: Record<string, number>, files: Record<string, string>): CgroupReader {
  return { fsType: (path) => types[path], readFile: (path) => files[path] };
}

const LAYOUTS: Record<'unified' | 'hybrid' | 'legacy', CgroupReader> = {
  unified: reader({ '/sys/fs/cgroup': FS_MAGIC.CGROUP2_SUPER_MAGIC }, { '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory hugetlb pids rdma misc\n' }),
  // As these machines: v1 controllers below a tmpfs, the unified hierarchy beside them with hugetlb only.
  hybrid: reader({ '/sys/fs/cgroup': FS_MAGIC.TMPFS_MAGIC, '/sys/fs/cgroup/unified': FS_MAGIC.CGROUP2_SUPER_MAGIC }, { '/sys/fs/cgroup/unified/cgroup.controllers': 'hugetlb\n' }),
  legacy: reader({ '/sys/fs/cgroup': FS_MAGIC.TMPFS_MAGIC, '/sys/fs/cgroup/unified': FS_MAGIC.TMPFS_MAGIC }, {}),
};

test('the probe tells the three layouts apart from statfs and cgroup.controllers', () => {
  assert.equal(probeCgroups(LAYOUTS.unified), { root: 'cgroup2', hybridUnified: false, controllers: ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids', 'rdma', 'misc'] });
  assert.equal(probeCgroups(LAYOUTS.hybrid), { root: 'tmpfs', hybridUnified: true, controllers: ['hugetlb'] });
  assert.equal(probeCgroups(LAYOUTS.legacy), { root: 'tmpfs', hybridUnified: false, controllers: [] });
  assert.is(cgroupLayout(probeCgroups(LAYOUTS.unified)), 'unified');
  assert.is(cgroupLayout(probeCgroups(LAYOUTS.hybrid)), 'hybrid');
  assert.is(cgroupLayout(probeCgroups(LAYOUTS.legacy)), 'legacy');
  assert.is(cgroupLayout(probeCgroups(reader({}, {}))), 'legacy', 'nothing mounted: no unified hierarchy either');
  // This machine answers too (whatever its layout): the real reader never throws.
  assert.ok(['unified', 'hybrid', 'legacy'].includes(cgroupLayout(probeCgroups())));
});

test('legacy is a refusal naming the 0:: line; hybrid and a unified tree without the controllers are warnings; unified with them is silent', () => {
  const legacy = probeCgroups(LAYOUTS.legacy);
  assert.match(cgroupProblem(legacy)!, 'only cgroup v1');
  assert.match(cgroupProblem(legacy)!, '"0::" in /proc/PID/cgroup');
  assert.match(cgroupProblem(legacy)!, 'systemd.unified_cgroup_hierarchy=1');
  assert.is(cgroupLimitWarning(legacy, 's.slice'), undefined);

  const hybrid = probeCgroups(LAYOUTS.hybrid);
  assert.is(cgroupProblem(hybrid), undefined);
  const warning = cgroupLimitWarning(hybrid, 's.slice')!;
  assert.match(warning, /^s\.slice: MemoryMax= \(memory\) and TasksMax= \(pids\) are not enforced/);
  assert.match(warning, 'hybrid host keeps on cgroup v1');

  const unified = probeCgroups(LAYOUTS.unified);
  assert.is(cgroupProblem(unified), undefined);
  assert.is(cgroupLimitWarning(unified, 's.slice'), undefined);
  const withoutPids: CgroupFacts = { ...unified, controllers: ['memory'] };
  assert.match(cgroupLimitWarning(withoutPids, 's.slice')!, /^s\.slice: TasksMax= \(pids\) is not enforced.*does not offer/);
});

const manifest = { name: 'opencode-pty-supervisor', version: '1.0.0', node: '>=20', sources: 'ab'.repeat(32), artifacts: { 'cli.js': { sha256: 'c'.repeat(64), mode: '0644' } } };
const bundle: Bundle = { dir: '/pkg/dist', manifest, manifestText: JSON.stringify(manifest), socketTemplate: '[Socket]\n', serviceTemplate: '[Service]\nExecStart=/x\n' };
const host = (cgroups: CgroupFacts): HostFacts => ({ euid: 0, systemdVersion: 252, systemdRunning: true, kernel: '6.1.0', node: { path: '/usr/bin/node', version: 'v20.11.1', chain: [{ path: '/usr/bin/node', uid: 0, mode: 0o755 }] }, cgroups });
const accounts: Accounts = { user: (n) => (n === 'opencode' ? { uid: 990, gid: 990 } : undefined), group: (n) => (n === 'opencode' ? { gid: 990, members: [] } : undefined), groupName: (g) => (g === 990 ? 'opencode' : undefined) };
const fresh: Existing = { file: () => undefined, isDir: () => false, link: () => undefined, record: undefined, socketEnabled: false, socketActive: false, brokerActive: false, brokerDir: undefined, liveSessions: [] };
const options = { clientUser: 'opencode', clientGroup: undefined, clientUnit: 'opencode.service', socketGroup: 'opencode-pty', layout: DEFAULT_LAYOUT, unitPrefix: 'opencode-pty-' };

test('the install plan: legacy refused with nothing planned, hybrid planned with the warning on the sessions slice, unified clean', () => {
  const legacy = planInstall(options, bundle, host(probeCgroups(LAYOUTS.legacy)), accounts, fresh);
  assert.ok(legacy.refusals.some((r) => r.includes('only cgroup v1')), legacy.refusals.join('\n'));
  assert.equal(legacy.steps, []);
  const hybrid = planInstall(options, bundle, host(probeCgroups(LAYOUTS.hybrid)), accounts, fresh);
  assert.equal(hybrid.refusals, []);
  assert.is(hybrid.warnings?.length, 1);
  assert.match(hybrid.warnings![0]!, `${SESSIONS_SLICE}: MemoryMax= (memory) and TasksMax= (pids) are not enforced`);
  assert.equal(planInstall(options, bundle, host(probeCgroups(LAYOUTS.unified)), accounts, fresh).warnings, []);
});

const dist = fileURLToPath(new URL('../../dist', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-cgroups-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function cli(command: typeof runInstall, args: string[], layout: keyof typeof LAYOUTS): { code: number; stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  const context: CommandContext = {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    run: () => ({ code: 0, stdout: '', stderr: '' }),
    bundleDir: dist,
    cgroups: () => probeCgroups(LAYOUTS[layout]),
  };
  return { code: command(args, context), stdout, stderr };
}

test('the commands: install --dry-run refuses a legacy host with the reason (exit 3); verify warns on a hybrid one, not on a unified one', () => {
  const prefix = join(dir, 'lib');
  const refused = cli(runInstall, ['--client-user', 'nobody', '--prefix', prefix, '--dry-run'], 'legacy');
  assert.is(refused.code, EXIT.REFUSED);
  assert.match(refused.stderr, /refused: this host has only cgroup v1/);
  assert.not.match(cli(runInstall, ['--client-user', 'nobody', '--prefix', prefix, '--dry-run'], 'hybrid').stderr, 'only cgroup v1');

  mkdirSync(prefix, { recursive: true });
  writeFileSync(join(prefix, 'installed.json'), JSON.stringify({ format: 1, current: 'x', versions: ['x'], files: {}, dirs: [], createdGroup: null, clientUnit: 'opencode.service', socketGroup: 'opencode-pty', nodePath: process.execPath, unitPrefix: 'opencode-pty-' }));
  const hybrid = cli(runVerify, ['--prefix', prefix], 'hybrid');
  assert.match(hybrid.stdout, new RegExp(`^warning: \\S+\\.slice: MemoryMax= \\(memory\\) and TasksMax= \\(pids\\) are not enforced`, 'm'));
  assert.not.match(cli(runVerify, ['--prefix', prefix], 'unified').stdout, 'not enforced');
});

test.run();
