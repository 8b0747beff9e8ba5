// verify's comparison and the requirement checks, as pure functions.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_LAYOUT, type InstallRecord } from '../../src/operate/layout.ts';
import { nodeSatisfies, parseVersion } from '../../src/operate/requirements.ts';
import { serviceUnit, sliceUnit } from '../../src/operate/unit-files.ts';
import { verifyDifferences, type VerifyFacts } from '../../src/operate/verify.ts';
import { figure } from '../../src/operate/system.ts';
import { helperProgram } from '../../src/operate/status.ts';

const record: InstallRecord = { format: 1, current: '1.0.0-abc', versions: ['1.0.0-abc'], files: { '/etc/systemd/system/x.socket': 'f'.repeat(64) }, dirs: [], createdGroup: null, clientUnit: 'a.service', socketGroup: 'g', nodePath: '/usr/bin/node', unitPrefix: 'opencode-pty-' };
const root = (sha256: string, mode = 0o644) => ({ sha256, mode, uid: 0, gid: 0 });
const facts = (overrides: Partial<VerifyFacts> = {}): VerifyFacts => ({
  record,
  currentLink: '1.0.0-abc',
  expected: { name: 'p', version: '1.0.0', node: '>=20', sources: 's', artifacts: { 'broker.js': { sha256: 'a'.repeat(64), mode: '0755' } } },
  file: (path) => (path.endsWith('broker.js') ? root('a'.repeat(64), 0o755) : path.endsWith('x.socket') ? root('f'.repeat(64)) : undefined),
  listed: ['broker.js', 'manifest.json'],
  unitNode: { path: '/usr/bin/node', version: 'v20.1.0', chain: [{ path: '/usr/bin/node', uid: 0, mode: 0o755 }] },
  runningNode: 'v20.1.0',
  configProblem: undefined,
  ...overrides,
});

test('a clean install has no differences', () => {
  assert.equal(verifyDifferences(DEFAULT_LAYOUT, facts()), []);
});

test('every kind of difference is named', () => {
  const found = verifyDifferences(
    DEFAULT_LAYOUT,
    facts({
      currentLink: 'other',
      file: (path) => (path.endsWith('broker.js') ? { sha256: 'b'.repeat(64), mode: 0o777, uid: 1000, gid: 0 } : undefined),
      listed: ['broker.js', 'manifest.json', 'extra.js'],
      unitNode: { path: '/usr/bin/node', version: 'v18.0.0', chain: [] },
      runningNode: 'v19.9.0',
      configProblem: 'config: client.user: no such account "x"',
    }),
  ).join('\n');
  for (const expected of [
    /current points at other, expected 1\.0\.0-abc/,
    /broker\.js: content differs/,
    /broker\.js: mode 0777, expected 0755/,
    /broker\.js: owned by 1000:0, expected root:root/,
    /broker\.js: writable by group or others/,
    /extra\.js: not part of the build/,
    /x\.socket: missing/,
    /the unit's Node: Node v18\.0\.0 at \/usr\/bin\/node does not satisfy >=20/,
    /this Node v19\.9\.0 does not satisfy >=20/,
    /config\.json: config: client\.user/,
  ]) assert.match(found, expected);
});

test('not installed is one difference', () => {
  assert.equal(verifyDifferences(DEFAULT_LAYOUT, facts({ record: undefined })), ['not installed: no install record at /usr/lib/opencode-pty/installed.json']);
});

test('Node ranges and versions', () => {
  assert.ok(nodeSatisfies('v20.0.0', '>=20'));
  assert.ok(nodeSatisfies('v22.3.1', '>=20.5'));
  assert.not.ok(nodeSatisfies('v20.4.9', '>=20.5'));
  assert.not.ok(nodeSatisfies('v18.19.0', '>=20'));
  assert.not.ok(nodeSatisfies('v20.0.0', '^20'), 'a range form we do not write is refused, not guessed');
  assert.equal(parseVersion('6.18.44-fc-v1045'), [6, 18, 44]);
});

test('the unit gets the Node and the versioned directory; the slice states its limits', () => {
  const unit = serviceUnit('A=1\nExecStart=/usr/bin/node /usr/lib/opencode-pty/broker.cjs\nEnvironment=OPENCODE_PTY_CONFIG=/etc/x\n', '/opt/node/bin/node', '/usr/lib/opencode-pty/1-a', '/etc/opencode-pty/config.json');
  assert.is(unit, 'A=1\nExecStart=/opt/node/bin/node /usr/lib/opencode-pty/1-a/broker.cjs\nEnvironment=OPENCODE_PTY_CONFIG=/etc/opencode-pty/config.json\n');
  assert.throws(() => serviceUnit('[Service]\n', '/n', '/d', '/c'), /no ExecStart/);
  assert.match(sliceUnit(), /^MemoryMax=50%\nTasksMax=4096\nCPUWeight=50$/m);
});

test('systemd figures: UINT64_MAX and unset are unavailable, zero is zero', () => {
  assert.is(figure('18446744073709551615'), undefined);
  assert.is(figure('[not set]'), undefined);
  assert.is(figure(undefined), undefined);
  assert.is(figure('0'), 0n);
  assert.is(figure('123'), 123n);
});

test("a session's program from the helper's argv, with or without leading options", () => {
  assert.equal(helperProgram(['/h', '--protocol=1', '--write-timeout-ms=10000', '24', '80', 'sleep', '600']), ['sleep', '600']);
  assert.equal(helperProgram(['/h', '24', '80', 'bash', '-l']), ['bash', '-l']);
});

test.run();
