// sessionUnitProperties: the exact a(sv) tuples, argv and environment passed unchanged, refusals by code.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  environmentEntries,
  execArgv,
  sessionUnitProperties,
  type PropertyTuple,
  type SessionUnitSpec,
} from '../../src/systemd/unit-properties.ts';
import { throwsCode } from './helpers.ts';

function spec(overrides: Partial<SessionUnitSpec> = {}): SessionUnitSpec {
  return {
    description: 'opencode-pty session',
    helperPath: '/usr/lib/opencode-pty/opencode-pty-session',
    helperArgs: ['24', '80', '/bin/bash', '-l'],
    user: 'agent',
    group: 'agent',
    cwdFd: 17,
    stdoutFd: 18,
    environment: { TERM: 'xterm-256color', LANG: 'C.UTF-8' },
    stopTimeoutSec: 5,
    ...overrides,
  };
}

function byName(tuples: PropertyTuple[]): Map<string, PropertyTuple> {
  const map = new Map<string, PropertyTuple>();
  for (const tuple of tuples) {
    assert.not.ok(map.has(tuple[0]), `${tuple[0]} appears once`);
    map.set(tuple[0], tuple);
  }
  return map;
}

/** A workspace session's helper arguments carry its Landlock rules (src/worker/workspace-plan.ts). */
const LANDLOCK_ARGS = ['--landlock', '--cwd-path=/home/u/p', '24', '80', '/bin/bash'];
/** A hardened session's helper enters its working directory by its path (src/worker/cwd-plan.ts). */
const CWD_ARGS = ['--cwd-path=/home/u/p', '24', '80', '/bin/bash'];

test('stderr: the control channel fd when given (the session helper reports there), else the journal', () => {
  const withControl = byName(sessionUnitProperties(spec({ stderrFd: 19 })));
  assert.equal(withControl.get('StandardErrorFileDescriptor'), ['StandardErrorFileDescriptor', 'h', 19]);
  assert.not.ok(withControl.has('StandardError'));
  throwsCode(() => sessionUnitProperties(spec({ stderrFd: -1 })), 'PROPERTY_INVALID');
});

test('builds exactly the expected tuples, in group order', () => {
  assert.equal(sessionUnitProperties(spec({ slice: 'opencode-pty.slice' })), [
    ['Description', 's', 'opencode-pty session'],
    ['AddRef', 'b', true],
    ['CollectMode', 's', 'inactive-or-failed'],
    ['Slice', 's', 'opencode-pty.slice'],
    ['SendSIGHUP', 'b', true],
    ['KillMode', 's', 'control-group'],
    ['TimeoutStopUSec', 't', 5_000_000n],
    ['Type', 's', 'exec'],
    ['User', 's', 'agent'],
    ['Group', 's', 'agent'],
    ['StandardInputFileDescriptor', 'h', 17],
    ['StandardOutputFileDescriptor', 'h', 18],
    ['StandardError', 's', 'journal'],
    ['Environment', 'as', ['TERM=xterm-256color', 'LANG=C.UTF-8']],
    ['IgnoreSIGPIPE', 'b', false],
    [
      'ExecStart',
      'a(sasb)',
      [['/usr/lib/opencode-pty/opencode-pty-session', ['/usr/lib/opencode-pty/opencode-pty-session', '24', '80', '/bin/bash', '-l'], false]],
    ],
  ]);
});

test('without a slice there is no Slice property', () => {
  assert.not.ok(byName(sessionUnitProperties(spec())).has('Slice'));
});

test('ExecStart is one command with no flags, and no ExecStartEx is set (systemd 252 cannot load it back)', () => {
  const tuples = byName(sessionUnitProperties(spec()));
  assert.not.ok(tuples.has('ExecStartEx'));
  const exec = tuples.get('ExecStart')![2] as Array<[string, string[], boolean]>;
  assert.is(exec.length, 1);
  assert.is(exec[0]![2], false, 'failure is not ignored');
});

test('argv with %, backslash, quotes, spaces and a newline passes unchanged; every $ is doubled for systemd to undo', () => {
  const hostile = ['%n %i %%', 'back\\slash', "it's", '"dq"', 'two  spaces', 'line\nbreak', '', ' ', ';', '-x', '@x', ':x', '+x', '!x'];
  const exec = byName(sessionUnitProperties(spec({ helperArgs: ['24', '80', '/bin/sh', '-c', ...hostile, '$HOME', '${X}', '$$', 'a$'] }))).get('ExecStart')![2] as Array<
    [string, string[], boolean]
  >;
  assert.equal(exec[0]![1], ['/usr/lib/opencode-pty/opencode-pty-session', '24', '80', '/bin/sh', '-c', ...hostile, '$$HOME', '$${X}', '$$$$', 'a$$']);
});

test('execArgv doubles each $ and nothing else', () => {
  assert.equal(execArgv(['$', '$$', 'x${Y}z', 'plain', '']), ['$$', '$$$$', 'x$${Y}z', 'plain', '']);
});

test('environment holds exactly the given entries, values verbatim', () => {
  const environment = { TERM: 'dumb', WEIRD: '$X ${Y} a=b\nc', EMPTY: '' };
  const tuples = byName(sessionUnitProperties(spec({ environment })));
  assert.equal(tuples.get('Environment'), ['Environment', 'as', ['TERM=dumb', 'WEIRD=$X ${Y} a=b\nc', 'EMPTY=']]);
  assert.equal(byName(sessionUnitProperties(spec({ environment: {} }))).get('Environment'), ['Environment', 'as', []]);
});

test('the configuration cannot undo the hardened profile; without the profile it applies', () => {
  const limits = { NoNewPrivileges: false, PrivateTmp: false, MemoryMax: '1G' };
  const hardened = byName(sessionUnitProperties(spec({ profile: 'hardened', helperArgs: CWD_ARGS, limits })));
  assert.equal(hardened.get('NoNewPrivileges'), ['NoNewPrivileges', 'b', true]);
  assert.equal(hardened.get('PrivateTmp'), ['PrivateTmp', 'b', true]);
  assert.ok(hardened.has('MemoryMax'), 'names the profile does not set still apply');
  const plain = byName(sessionUnitProperties(spec({ limits })));
  assert.equal(plain.get('NoNewPrivileges'), ['NoNewPrivileges', 'b', false]);
});

test('environment names must be shell-style identifiers', () => {
  for (const name of ['', '1X', 'A=B', 'A B', 'A-B', 'Ä']) {
    throwsCode(() => environmentEntries({ [name]: 'x' }), 'PROPERTY_INVALID');
  }
  throwsCode(() => environmentEntries({ X: 'nul\0inside' }), 'PROPERTY_INVALID');
});

test('NUL anywhere in argv, description or paths is refused', () => {
  throwsCode(() => sessionUnitProperties(spec({ helperArgs: ['a\0b'] })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ description: 'x\0' })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ inaccessiblePaths: ['/run/x\0'] })), 'PROPERTY_INVALID');
});

test('bad helper path, identity, fds, timeout and slice are refused', () => {
  throwsCode(() => sessionUnitProperties(spec({ helperPath: 'relative/helper' })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ user: '' })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ group: '' })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ cwdFd: -1 })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ stdoutFd: 1.5 })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ stopTimeoutSec: 0 })), 'PROPERTY_INVALID');
  throwsCode(() => sessionUnitProperties(spec({ slice: 'not a slice' })), 'PROPERTY_INVALID');
});

test('the runtime directory is hidden under the hardened profile only: the default one gets no mount namespace', () => {
  assert.not.ok(byName(sessionUnitProperties(spec())).has('InaccessiblePaths'));
  assert.not.ok(byName(sessionUnitProperties(spec({ profile: 'default' }))).has('InaccessiblePaths'));
  const hardened = byName(sessionUnitProperties(spec({ profile: 'hardened', helperArgs: CWD_ARGS })));
  assert.equal(hardened.get('InaccessiblePaths'), ['InaccessiblePaths', 'as', ['-/run/opencode-pty']]);
  // A caller's list adds to the profile's, never replaces it.
  assert.equal(byName(sessionUnitProperties(spec({ profile: 'hardened', helperArgs: CWD_ARGS, inaccessiblePaths: ['/srv/x'] }))).get('InaccessiblePaths'), ['InaccessiblePaths', 'as', ['-/run/opencode-pty', '-/srv/x']]);
  assert.equal(byName(sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, writablePaths: ['/w'], inaccessiblePaths: ['/srv/x', '/run/podman'] }))).get('InaccessiblePaths'), ['InaccessiblePaths', 'as', ['-/run/opencode-pty', '-/run/docker.sock', '-/run/containerd', '-/run/podman', '-/var/run/docker.sock', '-/srv/x']]);
});

test('a workspace unit without the helper\'s Landlock arguments is refused: its confinement is the helper\'s', () => {
  throwsCode(() => sessionUnitProperties(spec({ profile: 'workspace', writablePaths: ['/home/u/p'] })), 'PROPERTY_INVALID');
});

test('a hardened or workspace unit carries --cwd-path among the helper\'s options, read before ROWS only, never from the client\'s argv', () => {
  const refused = (profile: 'hardened' | 'workspace', helperArgs: string[]) =>
    throwsCode(() => sessionUnitProperties(spec({ profile, helperArgs, writablePaths: ['/home/u/p'] })), 'PROPERTY_INVALID');
  for (const profile of ['hardened', 'workspace'] as const) {
    const own = profile === 'workspace' ? ['--landlock'] : [];
    // None at all, or only in the client's argv (after ROWS and COLS), where the helper never reads it.
    refused(profile, [...own, '24', '80', '/bin/bash']);
    refused(profile, [...own, '24', '80', '/bin/echo', '--cwd-path=/home/u/p']);
    refused(profile, [...own, '24', '80', '--cwd-path=/home/u/p']);
    // Not absolute, empty, or two (the helper would take the last).
    refused(profile, [...own, '--cwd-path=home/u/p', '24', '80', '/bin/bash']);
    refused(profile, [...own, '--cwd-path=', '24', '80', '/bin/bash']);
    refused(profile, [...own, '--cwd-path=/home/u/p', '--cwd-path=/', '24', '80', '/bin/bash']);
    // The separate-value form is not the worker's: its value would read as ROWS here, so it proves nothing.
    refused(profile, [...own, '--cwd-path', '/home/u/p', '24', '80', '/bin/bash']);
    // A path with whitespace and ':' is an argument like any other (the workspace's unit-file paths are checked apart).
    sessionUnitProperties(spec({ profile, helperArgs: [...own, '--cwd-path=/home/u/My Project: 2', '24', '80', '/bin/bash'], writablePaths: ['/home/u/p'] }));
  }
  // The workspace's --landlock counts only among the options too.
  refused('workspace', ['--cwd-path=/home/u/p', '24', '80', '/bin/echo', '--landlock']);
  sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, writablePaths: ['/home/u/p'] }));
  // A warm unit's helper is told --warm alone: its session's options come with LAUNCH (checked there).
  sessionUnitProperties(spec({ profile: 'hardened', helperArgs: ['--warm'] }));
  refused('hardened', ['--warm', '24', '80', '/bin/bash']);
  // The default profile's unit has no mount namespace of its own: nothing to enter.
  sessionUnitProperties(spec({ profile: 'default', helperArgs: ['24', '80', '/bin/bash'] }));
});

test('the workspace profile holds everything hardened sets, hides the account\'s path sockets beside the runtime directory, and mounts all but its writable paths read-only', () => {
  const hardened = sessionUnitProperties(spec({ profile: 'hardened', helperArgs: CWD_ARGS }));
  const workspace = byName(sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, writablePaths: ['/home/u/p', '/srv/cache'], limits: { NoNewPrivileges: false, ProtectSystem: 'full', ProtectHome: 'read-only' } })));
  for (const [name, type, value] of hardened) {
    // The hidden paths grow, the mounts tighten, and the helper's arguments are the workspace's own.
    if (name === 'InaccessiblePaths' || name === 'ProtectSystem' || name === 'ExecStart') continue;
    assert.equal(workspace.get(name), [name, type, value], name);
  }
  assert.equal(workspace.get('InaccessiblePaths'), ['InaccessiblePaths', 'as', ['-/run/opencode-pty', '-/run/docker.sock', '-/run/containerd', '-/run/podman', '-/var/run/docker.sock']]);
  // Metadata calls outside the workspace meet a read-only mount (Landlock up to ABI 7 does not govern them).
  assert.equal(workspace.get('ProtectSystem'), ['ProtectSystem', 's', 'strict']);
  // The homes too (strict leaves them to ProtectHome=, whose /run/user entry would outrank the cover below).
  assert.equal(workspace.get('ReadOnlyPaths'), ['ReadOnlyPaths', 'as', ['-/home', '-/root', '-/run']]);
  // Not even the operator's: it would take the cover's place.
  assert.not.ok(workspace.has('ProtectHome'));
  assert.equal(workspace.get('ReadWritePaths'), ['ReadWritePaths', 'as', ['-/home/u/p', '-/srv/cache']]);
  // A temporary file system makes PID 1 refuse to start the unit without its mount namespace. /dev/shm is
  // the unit's own, empty, world-writable with the sticky bit (what the helper checks), bounded.
  assert.equal(workspace.get('TemporaryFileSystem'), ['TemporaryFileSystem', 'a(ss)', [['/run/user', 'ro'], ['/dev/shm', 'mode=1777,nosuid,size=256m,nr_inodes=16384']]]);
  // Without its writable paths the unit is refused; a path a unit file cannot carry is refused.
  throwsCode(() => sessionUnitProperties(spec({ profile: 'workspace' })), 'PROPERTY_INVALID');
  for (const path of ['/a b', '/a:b', 'rel', '/a\nb', '/a"b']) throwsCode(() => sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, writablePaths: [path] })), 'PROPERTY_INVALID');
  assert.not.ok(byName(sessionUnitProperties(spec({ profile: 'hardened', helperArgs: CWD_ARGS }))).has('ReadWritePaths'));
});

test('a covered home is a read-only temporary file system, the workspace under it a bind from the host\'s tree; a home a unit file cannot carry is refused', () => {
  const tuples = sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, boundPaths: ['/home/u/p'], homeCover: '/home/u' }));
  const byNameAll = (name: string) => tuples.filter(([found]) => found === name).map(([, , value]) => value);
  assert.equal(byNameAll('BindPaths'), [[['/home/u/p', '/home/u/p', false, 0n]]]);
  assert.equal(byNameAll('TemporaryFileSystem'), [[['/home/u', 'ro']], [['/run/user', 'ro'], ['/dev/shm', 'mode=1777,nosuid,size=256m,nr_inodes=16384']]]);
  assert.not.ok(tuples.some(([name]) => name === 'ReadWritePaths'));
  for (const home of ['/', '/a b', '/a:b']) throwsCode(() => sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, boundPaths: ['/home/u/p'], homeCover: home })), 'PROPERTY_INVALID');
  for (const path of ['/a b', '/a:b']) throwsCode(() => sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, boundPaths: [path] })), 'PROPERTY_INVALID');
});

test('read-only paths become BindReadOnlyPaths= onto themselves; one systemd could not write back is refused', () => {
  const tuples = byName(sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, writablePaths: ['/home/u/p'], readOnlyPaths: ['/home/u/p/.git'] })));
  assert.equal(tuples.get('BindReadOnlyPaths'), ['BindReadOnlyPaths', 'a(ssbt)', [['/home/u/p/.git', '/home/u/p/.git', false, 0n]]]);
  assert.not.ok(byName(sessionUnitProperties(spec({ profile: 'workspace', helperArgs: LANDLOCK_ARGS, writablePaths: ['/home/u/p'], readOnlyPaths: [] }))).has('BindReadOnlyPaths'));
  for (const path of ['/a b/.git', '/a:b', 'rel', '/a\nb']) throwsCode(() => sessionUnitProperties(spec({ readOnlyPaths: [path] })), 'PROPERTY_INVALID');
});

test('inaccessible paths: parameter adds to the default, "-" tolerates a missing path, empty list sets none', () => {
  const tuples = byName(sessionUnitProperties(spec({ inaccessiblePaths: ['/run/a', '/srv/b'] })));
  assert.equal(tuples.get('InaccessiblePaths'), ['InaccessiblePaths', 'as', ['-/run/a', '-/srv/b']]);
  assert.not.ok(byName(sessionUnitProperties(spec({ inaccessiblePaths: [] }))).has('InaccessiblePaths'));
  throwsCode(() => sessionUnitProperties(spec({ inaccessiblePaths: ['run/a'] })), 'PROPERTY_INVALID');
});

test('allowed limits are appended with their D-Bus names and signatures', () => {
  const tuples = sessionUnitProperties(spec({ limits: { MemoryMax: '512M', CPUQuota: '50%', NoNewPrivileges: true, RuntimeMaxSec: 3600 } }));
  assert.equal(tuples.slice(-4), [
    ['MemoryMax', 't', 512n * 1024n * 1024n],
    ['CPUQuotaPerSecUSec', 't', 500_000n],
    ['NoNewPrivileges', 'b', true],
    ['RuntimeMaxUSec', 't', 3_600_000_000n],
  ]);
});

test('identity, command, kill and privilege properties are refused as limits', () => {
  for (const name of ['User', 'Group', 'ExecStart', 'ExecStartEx', 'ExecStartPre', 'KillMode', 'DynamicUser', 'AmbientCapabilities', 'CapabilityBoundingSet', 'Environment', 'InaccessiblePaths', 'ReadWritePaths', 'StandardInputFileDescriptor', 'AddRef', 'Slice', 'constructor', '__proto__']) {
    throwsCode(() => sessionUnitProperties(spec({ limits: { [name]: 'x' } })), 'PROPERTY_NOT_ALLOWED');
  }
});

test.run();
