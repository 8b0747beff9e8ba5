// The sessions slice's name nests nowhere (a dash in a slice name is a level, systemd.slice(5)); an
// install on top of an old one moves the config's old default name to it and removes the old slice's
// unit, leaving a name of the operator's own; install and uninstall stop only recorded slices that
// hold no unit install did not create.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { describeStep, planInstall, type Accounts, type Bundle, type Existing, type InstallOptions } from '../../src/operate/install-plan.ts';
import { BROKER_SLICE, DEFAULT_LAYOUT, OLD_SESSIONS_SLICE, SESSIONS_SLICE, paths, recordedSlices, type InstallRecord } from '../../src/operate/layout.ts';
import { sha256 } from '../../src/operate/manifest.ts';
import type { HostFacts } from '../../src/operate/requirements.ts';
import { slicesToStop, type SliceState } from '../../src/operate/slices.ts';
import { migrateSessionSlice } from '../../src/operate/slice-migration.ts';
import { planUninstall } from '../../src/operate/uninstall-plan.ts';

test('the sessions slice has no dash (a top-level slice), and the config default is the same name', () => {
  assert.is(SESSIONS_SLICE, 'opencode_pty_sessions.slice');
  assert.not.match(SESSIONS_SLICE.replace(/\.slice$/, ''), '-');
  assert.is(DEFAULT_SESSION.slice, SESSIONS_SLICE);
  assert.is(OLD_SESSIONS_SLICE, 'opencode-pty-sessions.slice');
});

/** An old install's slices on a host where the operator's agent runs in opencode.slice. */
const busyTree: Record<string, SliceState> = {
  'opencode-pty-sessions.slice': { active: true, members: ['opencode-pty-session-0a.service'] },
  'opencode-pty.slice': { active: true, members: ['opencode-pty-sessions.slice'] },
  'opencode.slice': { active: true, members: ['opencode-pty.slice', 'opencode.service'] },
  [BROKER_SLICE]: { active: true, members: ['opencode-pty-supervisor@broker.service'] },
};
const stateOf = (tree: Record<string, SliceState>) => (slice: string) => tree[slice] ?? { active: false, members: [] };

test('slices: a recorded slice holding a unit install did not create is kept (and so are its parents), the rest stop', () => {
  const legacy = recordedSlices({ unitPrefix: 'opencode-pty-' } as InstallRecord);
  assert.equal(legacy, ['opencode-pty-sessions.slice', 'opencode-pty.slice', 'opencode.slice', BROKER_SLICE]);
  const decision = slicesToStop(legacy, stateOf(busyTree), 'opencode-pty-');
  assert.equal(decision.stop, ['opencode-pty-sessions.slice', 'opencode-pty.slice', BROKER_SLICE]);
  assert.equal(decision.kept, [{ slice: 'opencode.slice', foreign: ['opencode.service'] }]);
  // The agent elsewhere: all of them go; an inactive one needs no stop.
  const alone = { ...busyTree, 'opencode.slice': { active: true, members: ['opencode-pty.slice'] }, [BROKER_SLICE]: { active: false, members: [] } };
  assert.equal(slicesToStop(legacy, stateOf(alone), 'opencode-pty-'), { stop: ['opencode-pty-sessions.slice', 'opencode-pty.slice', 'opencode.slice'], kept: [] });
  // A foreign unit deep inside a listed child keeps every listed parent; a unit named like ours but not a session is foreign.
  const deep = { ...alone, 'opencode-pty-sessions.slice': { active: true, members: ['opencode-pty-agent.service'] } };
  assert.equal(slicesToStop(legacy, stateOf(deep), 'opencode-pty-').stop, []);
  assert.equal(slicesToStop(legacy, stateOf(deep), 'opencode-pty-').kept.map((k) => k.slice), ['opencode-pty-sessions.slice', 'opencode-pty.slice', 'opencode.slice']);
});

test("config migration: the old default becomes the new name, everything else kept; an operator's own name is left, with a note", () => {
  const old = { client: { user: 'opencode' }, session: { slice: OLD_SESSIONS_SLICE, term: 'xterm' }, limits: { maxSessions: 4 } };
  const moved = migrateSessionSlice(JSON.stringify(old), '/etc/opencode-pty/config.json');
  assert.equal(JSON.parse(moved.content!), { ...old, session: { slice: SESSIONS_SLICE, term: 'xterm' } });
  assert.match(moved.note!, `session.slice ${OLD_SESSIONS_SLICE} (the old default`);
  const own = migrateSessionSlice(JSON.stringify({ session: { slice: 'agents.slice' } }), '/c.json');
  assert.is(own.content, undefined);
  assert.match(own.note!, '/c.json names its own session.slice agents.slice: kept');
  assert.equal(migrateSessionSlice(JSON.stringify({ session: { slice: SESSIONS_SLICE } }), '/c.json'), {});
  assert.equal(migrateSessionSlice(JSON.stringify({ session: {} }), '/c.json'), {}, 'no slice: the default, which is the new name');
  assert.equal(migrateSessionSlice('{ not json', '/c.json'), {});
});

const manifest = { name: 'opencode-pty-supervisor', version: '1.1.0', node: '>=20', sources: 'ab'.repeat(32), artifacts: { 'cli.js': { sha256: 'c'.repeat(64), mode: '0644' } } };
const bundle: Bundle = { dir: '/pkg/dist', manifest, manifestText: JSON.stringify(manifest), socketTemplate: '[Socket]\n', serviceTemplate: '[Service]\nExecStart=/x\n' };
const host: HostFacts = { euid: 0, systemdVersion: 252, systemdRunning: true, kernel: '6.18.0', node: { path: '/usr/bin/node', version: 'v20.11.1', chain: [{ path: '/usr/bin/node', uid: 0, mode: 0o755 }] }, cgroups: { root: 'cgroup2', hybridUnified: false, controllers: ['memory', 'pids'], v1Controllers: [] } };
const accounts: Accounts = { user: (n) => (n === 'opencode' ? { uid: 990, gid: 990 } : undefined), group: (n) => ({ opencode: { gid: 990, members: [] }, 'opencode-pty': { gid: 991, members: [] } })[n], groupName: (g) => (g === 990 ? 'opencode' : undefined) };
const options: InstallOptions = { clientUser: 'opencode', clientGroup: undefined, clientUnit: 'opencode.service', socketGroup: 'opencode-pty', layout: DEFAULT_LAYOUT, unitPrefix: 'opencode-pty-' };
const layout = DEFAULT_LAYOUT;
const oldSliceFile = paths.unit(layout, OLD_SESSIONS_SLICE);
/** An install made before the slices were recorded, by a version whose slice was the old default. */
const oldRecord: InstallRecord = { format: 1, current: '1.0.0-x', versions: ['1.0.0-x'], files: { [oldSliceFile]: 'd'.repeat(64) }, dirs: [], createdGroup: 'opencode-pty', clientUnit: 'opencode.service', clientUser: 'opencode', socketGroup: 'opencode-pty', nodePath: '/usr/bin/node', unitPrefix: 'opencode-pty-' };

function oldHost(config: object, overrides: Partial<Existing> = {}): Existing {
  const files: Record<string, string> = { [paths.config(layout)]: JSON.stringify(config), [oldSliceFile]: '[Slice]\n' };
  return {
    file: (p) => (p in files ? { sha256: sha256(files[p]!), mode: 0o644, uid: 0, gid: 0 } : undefined),
    text: (p) => files[p],
    isDir: () => true,
    link: () => '1.0.0-x',
    record: oldRecord,
    socketEnabled: true,
    socketActive: true,
    brokerActive: false,
    brokerDir: undefined,
    liveSessions: [],
    sliceState: stateOf({ ...busyTree, 'opencode-pty-sessions.slice': { active: true, members: [] } }),
    ...overrides,
  };
}
const changedLines = (steps: { step: Parameters<typeof describeStep>[0]; change: boolean }[]) => steps.filter((s) => s.change).map((s) => describeStep(s.step));

test('install on top of an old install: the old default rewritten, its slice unit removed, its slices stopped when idle and free, all recorded', () => {
  const plan = planInstall(options, bundle, host, accounts, oldHost({ session: { slice: OLD_SESSIONS_SLICE } }));
  assert.equal(plan.refusals, []);
  const config = plan.steps.find((s) => s.step.op === 'write' && s.step.path === paths.config(layout))!;
  assert.ok(config.change);
  assert.is(JSON.parse((config.step as { content: string }).content).session.slice, SESSIONS_SLICE);
  assert.ok(plan.notes.some((n) => n.includes(`is now ${SESSIONS_SLICE}`)), plan.notes.join('\n'));
  const lines = changedLines(plan.steps);
  assert.ok(lines.includes(`remove ${oldSliceFile}`), lines.join('\n'));
  assert.ok(lines.includes(`write ${paths.unit(layout, SESSIONS_SLICE)} (mode 0644, ${(plan.steps.find((s) => s.step.op === 'write' && s.step.path.endsWith(SESSIONS_SLICE))!.step as { content: string }).content.length} bytes)`));
  // opencode.slice holds the operator's agent: not stopped.
  assert.ok(lines.includes('systemctl stop opencode-pty-sessions.slice opencode-pty.slice'), lines.join('\n'));
  assert.ok(lines.indexOf('systemctl daemon-reload') < lines.indexOf('systemctl stop opencode-pty-sessions.slice opencode-pty.slice'));
  const record = JSON.parse((plan.steps.find((s) => s.step.op === 'write' && s.step.path.endsWith('installed.json'))!.step as { content: string }).content) as InstallRecord;
  assert.equal(record.slices, ['opencode-pty-sessions.slice', 'opencode-pty.slice', 'opencode.slice', BROKER_SLICE, SESSIONS_SLICE]);
  assert.not.ok(oldSliceFile in record.files);

  // A session still in the old slice: nothing is stopped now (uninstall, or the next install, does it).
  const busy = planInstall(options, bundle, host, accounts, oldHost({ session: { slice: OLD_SESSIONS_SLICE } }, { liveSessions: ['opencode-pty-session-0a.service'] }));
  assert.not.ok(changedLines(busy.steps).some((l) => l.startsWith('systemctl stop opencode-pty')), changedLines(busy.steps).join('\n'));
});

test("install on top of an old install with the operator's own slice name: the config untouched, a note", () => {
  const plan = planInstall(options, bundle, host, accounts, oldHost({ session: { slice: 'agents-pty.slice' } }));
  const config = plan.steps.find((s) => s.step.op === 'write' && s.step.path === paths.config(layout))!;
  assert.not.ok(config.change);
  assert.ok(plan.notes.some((n) => n.includes('names its own session.slice agents-pty.slice: kept')), plan.notes.join('\n'));
});

test('uninstall stops only the recorded slices that hold nothing install did not create, and says which it left', () => {
  const record: InstallRecord = { ...oldRecord, files: {}, slices: recordedSlices(oldRecord).concat(SESSIONS_SLICE) };
  const plan = planUninstall({ layout, purge: false }, record, oldHost({}, { record, sliceState: stateOf({ ...busyTree, [SESSIONS_SLICE]: { active: true, members: ['opencode-pty-session-1.service'] } }) }), 0);
  const stop = changedLines(plan.steps).find((l) => l.startsWith('systemctl stop') && l.includes('.slice'))!;
  assert.is(stop, `systemctl stop opencode-pty-sessions.slice opencode-pty.slice ${BROKER_SLICE} ${SESSIONS_SLICE}`);
  assert.ok(plan.notes.includes('left opencode.slice running: it holds opencode.service, which install did not create'), plan.notes.join('\n'));
  // An unrecorded slice is never stopped, even one named like ours.
  assert.not.match(stop, 'system.slice');
});

test.run();
