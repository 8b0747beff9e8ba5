// The cgroup layouts install and verify tell apart, each shown through an injected probe (the machine
// is not changed): unified with memory and pids is silent; hybrid with memory and pids on cgroup v1
// (these machines) installs with a note that the limits hold through v1 (MemoryMax= as
// memory.limit_in_bytes) and that the v2-only memory settings do nothing; a controller in neither
// hierarchy (the test sandbox: a unified tree without memory and pids, no v1 mounts) is a warning that
// names it; legacy (v1 only) is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandContext } from '../../src/cli/context.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { printPlan, runInstall } from '../../src/cli/install.ts';
import { runVerify } from '../../src/cli/verify.ts';
import { configuredPropertyNames, sessionLimitReport } from '../../src/operate/cgroup-limits.ts';
import { cgroupLayout, cgroupProblem, controllerHome, FS_MAGIC, probeCgroups, type CgroupFacts, type CgroupReader } from '../../src/operate/cgroups.ts';
import { planInstall, type Accounts, type Bundle, type Existing } from '../../src/operate/install-plan.ts';
import { DEFAULT_LAYOUT, paths, SESSIONS_SLICE } from '../../src/operate/layout.ts';
import type { HostFacts } from '../../src/operate/requirements.ts';

/** A host's /sys/fs/cgroup as statfs types and files. */
function reader(types: Record<string, number>, files: Record<string, string>): CgroupReader {
  return { fsType: (path) => types[path], readFile: (path) => files[path] };
}

const { CGROUP2_SUPER_MAGIC: CGROUP2, TMPFS_MAGIC: TMPFS, CGROUP_SUPER_MAGIC: CGROUP1 } = FS_MAGIC;
const LAYOUTS = {
  unified: reader({ '/sys/fs/cgroup': CGROUP2 }, { '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory hugetlb pids rdma misc\n' }),
  // As these machines: v1 controllers below a tmpfs, the unified hierarchy beside them with hugetlb only.
  hybrid: reader(
    { '/sys/fs/cgroup': TMPFS, '/sys/fs/cgroup/unified': CGROUP2, '/sys/fs/cgroup/memory': CGROUP1, '/sys/fs/cgroup/pids': CGROUP1, '/sys/fs/cgroup/cpu': CGROUP1 },
    { '/sys/fs/cgroup/unified/cgroup.controllers': 'hugetlb\n' },
  ),
  // Hybrid with pids on no v1 hierarchy: the unified tree offers it, and systemd 252 still does not use it there.
  hybridNoPids: reader(
    { '/sys/fs/cgroup': TMPFS, '/sys/fs/cgroup/unified': CGROUP2, '/sys/fs/cgroup/memory': CGROUP1, '/sys/fs/cgroup/pids': TMPFS },
    { '/sys/fs/cgroup/unified/cgroup.controllers': 'hugetlb pids\n' },
  ),
  // As the test sandbox: cgroup2 at the root without memory and pids, no v1 mounts.
  sandbox: reader({ '/sys/fs/cgroup': CGROUP2 }, { '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io\n' }),
  legacy: reader({ '/sys/fs/cgroup': TMPFS, '/sys/fs/cgroup/unified': TMPFS, '/sys/fs/cgroup/memory': CGROUP1, '/sys/fs/cgroup/pids': CGROUP1 }, {}),
} satisfies Record<string, CgroupReader>;
const facts = (layout: keyof typeof LAYOUTS): CgroupFacts => probeCgroups(LAYOUTS[layout]);

test('the probe tells the layouts apart from statfs and cgroup.controllers, and finds the v1 memory and pids hierarchies', () => {
  assert.equal(facts('unified'), { root: 'cgroup2', hybridUnified: false, controllers: ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids', 'rdma', 'misc'], v1Controllers: [] });
  assert.equal(facts('hybrid'), { root: 'tmpfs', hybridUnified: true, controllers: ['hugetlb'], v1Controllers: ['memory', 'pids'] });
  assert.equal(facts('hybridNoPids'), { root: 'tmpfs', hybridUnified: true, controllers: ['hugetlb', 'pids'], v1Controllers: ['memory'] });
  assert.equal(facts('sandbox'), { root: 'cgroup2', hybridUnified: false, controllers: ['cpuset', 'cpu', 'io'], v1Controllers: [] });
  assert.equal(facts('legacy'), { root: 'tmpfs', hybridUnified: false, controllers: [], v1Controllers: ['memory', 'pids'] });
  assert.is(cgroupLayout(facts('unified')), 'unified');
  assert.is(cgroupLayout(facts('hybrid')), 'hybrid');
  assert.is(cgroupLayout(facts('sandbox')), 'unified');
  assert.is(cgroupLayout(facts('legacy')), 'legacy');
  assert.is(cgroupLayout(probeCgroups(reader({}, {}))), 'legacy', 'nothing mounted: no unified hierarchy either');
  // This machine answers too (whatever its layout): the real reader never throws.
  const here = probeCgroups();
  assert.ok(['unified', 'hybrid', 'legacy'].includes(cgroupLayout(here)));
  assert.ok(here.v1Controllers.every((c) => c === 'memory' || c === 'pids'));
});

test('where systemd drives memory and pids: the unified tree on a unified host, only v1 on a hybrid one, else nowhere', () => {
  assert.equal([controllerHome(facts('unified'), 'memory'), controllerHome(facts('unified'), 'pids')], ['unified', 'unified']);
  assert.equal([controllerHome(facts('hybrid'), 'memory'), controllerHome(facts('hybrid'), 'pids')], ['v1', 'v1']);
  assert.equal([controllerHome(facts('hybridNoPids'), 'memory'), controllerHome(facts('hybridNoPids'), 'pids')], ['v1', 'none'], "the unified tree's pids is not systemd's on a hybrid host");
  assert.equal([controllerHome(facts('sandbox'), 'memory'), controllerHome(facts('sandbox'), 'pids')], ['none', 'none']);
});

test('legacy is a refusal naming the 0:: line, with no limit report', () => {
  const legacy = facts('legacy');
  assert.match(cgroupProblem(legacy)!, 'only cgroup v1');
  assert.match(cgroupProblem(legacy)!, '"0::" in /proc/PID/cgroup');
  assert.match(cgroupProblem(legacy)!, 'systemd.unified_cgroup_hierarchy=1');
  assert.equal(sessionLimitReport(legacy, 's.slice', ['MemoryHigh']), {});
  for (const layout of ['unified', 'hybrid', 'hybridNoPids', 'sandbox'] as const) assert.is(cgroupProblem(facts(layout)), undefined, layout);
});

test('unified with memory and pids: nothing to say, whatever session.properties sets', () => {
  assert.equal(sessionLimitReport(facts('unified'), 's.slice', []), {});
  assert.equal(sessionLimitReport(facts('unified'), 's.slice', ['MemoryHigh', 'MemorySwapMax', 'TasksMax']), {});
});

test('hybrid with memory and pids on v1: a note (no warning) that the limits hold through v1, and which v2-only settings do nothing', () => {
  const plain = sessionLimitReport(facts('hybrid'), 's.slice', []);
  assert.is(plain.warning, undefined);
  assert.match(plain.note!, /^s\.slice: MemoryMax= and TasksMax= are enforced through cgroup v1 on this hybrid host \(MemoryMax= as memory\.limit_in_bytes, TasksMax= as pids\.max\)/);
  assert.match(plain.note!, 'the memory settings of cgroup v2 alone (MemoryMin=, MemoryLow=, MemoryHigh=, MemorySwapMax=) have no effect here');
  assert.not.match(plain.note!, 'session.properties', 'the config sets none');
  assert.not.match(plain.note!, 'not enforced');

  const configured = sessionLimitReport(facts('hybrid'), 's.slice', ['MemoryMax', 'MemoryHigh', 'Nice', 'MemorySwapMax', 'TasksMax']);
  assert.is(configured.warning, undefined);
  assert.match(configured.note!, "so session.properties' MemoryHigh and MemorySwapMax do nothing");
  assert.match(sessionLimitReport(facts('hybrid'), 's.slice', ['MemoryHigh']).note!, "so session.properties' MemoryHigh does nothing;");
});

test('a controller in neither hierarchy: the warning names it and what goes unenforced; the other still gets its note', () => {
  const sandbox = sessionLimitReport(facts('sandbox'), 's.slice', []);
  assert.is(sandbox.note, undefined);
  assert.match(sandbox.warning!, /^s\.slice: MemoryMax= \(memory\) and TasksMax= \(pids\) are not enforced: the unified hierarchy here does not offer the memory and pids controllers/);
  assert.not.match(sandbox.warning!, 'session.properties');
  const sandboxConfigured = sessionLimitReport(facts('sandbox'), 's.slice', ['MemoryHigh', 'TasksMax', 'Nice']);
  assert.match(sandboxConfigured.warning!, "are not enforced, nor session.properties' MemoryHigh and TasksMax:");

  const withoutPids: CgroupFacts = { ...facts('unified'), controllers: ['memory'] };
  assert.match(sessionLimitReport(withoutPids, 's.slice', ['MemoryHigh']).warning!, /^s\.slice: TasksMax= \(pids\) is not enforced: the unified hierarchy here does not offer the pids controller \(/);
  assert.is(sessionLimitReport(withoutPids, 's.slice', []).note, undefined);

  const hybridNoPids = sessionLimitReport(facts('hybridNoPids'), 's.slice', ['TasksMax']);
  assert.match(hybridNoPids.warning!, /^s\.slice: TasksMax= \(pids\) is not enforced, nor session.properties' TasksMax: this hybrid host mounts no cgroup v1 hierarchy at \/sys\/fs\/cgroup\/pids/);
  assert.not.match(hybridNoPids.warning!, 'MemoryMax');
  assert.match(hybridNoPids.note!, /^s\.slice: MemoryMax= is enforced through cgroup v1 on this hybrid host \(MemoryMax= as memory\.limit_in_bytes\); /);
});

test("a config's session.properties names, from its text; none from a config that does not parse", () => {
  assert.equal(configuredPropertyNames(JSON.stringify({ session: { properties: { MemoryHigh: '1G', Nice: 5 } } })), ['MemoryHigh', 'Nice']);
  assert.equal(configuredPropertyNames(JSON.stringify({ session: {} })), []);
  assert.equal(configuredPropertyNames(JSON.stringify({ session: { properties: ['MemoryHigh'] } })), []);
  assert.equal(configuredPropertyNames('{'), []);
  assert.equal(configuredPropertyNames('null'), []);
  assert.equal(configuredPropertyNames(undefined), []);
});

const manifest = { name: 'opencode-pty-supervisor', version: '1.0.0', node: '>=20', sources: 'ab'.repeat(32), artifacts: { 'cli.js': { sha256: 'c'.repeat(64), mode: '0644' } } };
const bundle: Bundle = { dir: '/pkg/dist', manifest, manifestText: JSON.stringify(manifest), socketTemplate: '[Socket]\n', serviceTemplate: '[Service]\nExecStart=/x\n' };
const host = (cgroups: CgroupFacts): HostFacts => ({ euid: 0, systemdVersion: 252, systemdRunning: true, kernel: '6.1.0', node: { path: '/usr/bin/node', version: 'v20.11.1', chain: [{ path: '/usr/bin/node', uid: 0, mode: 0o755 }] }, cgroups });
const accounts: Accounts = { user: (n) => (n === 'opencode' ? { uid: 990, gid: 990 } : undefined), group: (n) => (n === 'opencode' ? { gid: 990, members: [] } : undefined), groupName: (g) => (g === 990 ? 'opencode' : undefined) };
const fresh: Existing = { file: () => undefined, isDir: () => false, link: () => undefined, record: undefined, socketEnabled: false, socketActive: false, brokerActive: false, brokerDir: undefined, liveSessions: [] };
const options = { clientUser: 'opencode', clientGroup: undefined, clientUnit: 'opencode.service', socketGroup: 'opencode-pty', layout: DEFAULT_LAYOUT, unitPrefix: 'opencode-pty-' };

const limitNotes = (notes: string[]) => notes.filter((note) => note.startsWith(`${SESSIONS_SLICE}:`));

test('the install plan: legacy refused with nothing planned; hybrid planned with a note on the sessions slice; the sandbox with the warning; unified clean', () => {
  const legacy = planInstall(options, bundle, host(facts('legacy')), accounts, fresh);
  assert.ok(legacy.refusals.some((r) => r.includes('only cgroup v1')), legacy.refusals.join('\n'));
  assert.equal(legacy.steps, []);

  const hybrid = planInstall(options, bundle, host(facts('hybrid')), accounts, fresh);
  assert.equal(hybrid.refusals, []);
  assert.equal(hybrid.warnings, []);
  assert.is(limitNotes(hybrid.notes).length, 1);
  assert.match(limitNotes(hybrid.notes)[0]!, `${SESSIONS_SLICE}: MemoryMax= and TasksMax= are enforced through cgroup v1 on this hybrid host (MemoryMax= as memory.limit_in_bytes`);
  assert.not.match(limitNotes(hybrid.notes)[0]!, 'session.properties', 'a fresh config sets no session property');

  const sandbox = planInstall(options, bundle, host(facts('sandbox')), accounts, fresh);
  assert.equal(sandbox.refusals, []);
  assert.is(sandbox.warnings?.length, 1);
  assert.match(sandbox.warnings![0]!, `${SESSIONS_SLICE}: MemoryMax= (memory) and TasksMax= (pids) are not enforced`);
  assert.equal(limitNotes(sandbox.notes), []);

  const unified = planInstall(options, bundle, host(facts('unified')), accounts, fresh);
  assert.equal(unified.warnings, []);
  assert.equal(limitNotes(unified.notes), []);
});

test("an upgrade on a hybrid host names the kept config's v2-only session properties in the note", () => {
  const configPath = paths.config(DEFAULT_LAYOUT);
  const config = JSON.stringify({ client: { user: 'opencode' }, session: { slice: SESSIONS_SLICE, properties: { MemoryHigh: '2G', TasksMax: 512 } } });
  const kept: Existing = { ...fresh, file: (path) => (path === configPath ? { sha256: 'd'.repeat(64), mode: 0o644, uid: 0, gid: 0 } : undefined), text: (path) => (path === configPath ? config : undefined) };
  const plan = planInstall(options, bundle, host(facts('hybrid')), accounts, kept);
  assert.equal(plan.warnings, []);
  assert.match(limitNotes(plan.notes)[0]!, "so session.properties' MemoryHigh does nothing");
  assert.match(planInstall(options, bundle, host(facts('sandbox')), accounts, kept).warnings![0]!, "are not enforced, nor session.properties' MemoryHigh and TasksMax:");
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
    cgroups: () => facts(layout),
  };
  return { code: command(args, context), stdout, stderr };
}

const NOT_ENFORCED = /^warning: \S+\.slice: MemoryMax= \(memory\) and TasksMax= \(pids\) are not enforced/m;
const THROUGH_V1 = /^note: \S+\.slice: MemoryMax= and TasksMax= are enforced through cgroup v1 on this hybrid host \(MemoryMax= as memory\.limit_in_bytes/m;

test('the commands: install --dry-run refuses a legacy host (exit 3); a printed plan and verify note a hybrid one, warn on the sandbox\'s, say neither on a unified one', () => {
  const prefix = join(dir, 'lib');
  const install = (layout: keyof typeof LAYOUTS) => cli(runInstall, ['--client-user', 'nobody', '--prefix', prefix, '--dry-run'], layout);
  const refused = install('legacy');
  assert.is(refused.code, EXIT.REFUSED);
  assert.match(refused.stderr, /refused: this host has only cgroup v1/);
  assert.not.match(install('hybrid').stderr, 'only cgroup v1');
  // The rest of a dry run needs systemd as PID 1 (refused here before a plan): its printing of a plan is shown instead.
  const printed = (layout: keyof typeof LAYOUTS) => {
    let out = '';
    printPlan(planInstall(options, bundle, host(facts(layout)), accounts, fresh), (text) => (out += text));
    return out;
  };
  assert.match(printed('hybrid'), THROUGH_V1);
  assert.not.match(printed('hybrid'), NOT_ENFORCED);
  assert.match(printed('sandbox'), NOT_ENFORCED);
  assert.not.match(printed('sandbox'), 'through cgroup v1');
  assert.not.match(printed('unified'), /\.slice: (MemoryMax|TasksMax)/);

  mkdirSync(prefix, { recursive: true });
  writeFileSync(join(prefix, 'installed.json'), JSON.stringify({ format: 1, current: 'x', versions: ['x'], files: {}, dirs: [], createdGroup: null, clientUnit: 'opencode.service', socketGroup: 'opencode-pty', nodePath: process.execPath, unitPrefix: 'opencode-pty-' }));
  const hybrid = cli(runVerify, ['--prefix', prefix], 'hybrid');
  assert.match(hybrid.stdout, THROUGH_V1);
  assert.not.match(hybrid.stdout, 'not enforced');
  const sandbox = cli(runVerify, ['--prefix', prefix], 'sandbox');
  assert.match(sandbox.stdout, NOT_ENFORCED);
  assert.match(sandbox.stdout, 'does not offer the memory and pids controllers');
  assert.not.match(sandbox.stdout, 'through cgroup v1');
  const unified = cli(runVerify, ['--prefix', prefix], 'unified').stdout;
  assert.not.match(unified, 'not enforced');
  assert.not.match(unified, 'through cgroup v1');
});

test.run();
