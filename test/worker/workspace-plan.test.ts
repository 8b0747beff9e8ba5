// The workspace profile's helper arguments: the system's read list, the private /tmp, the operator's paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { ErrorCode, SessionError } from '../../src/protocol/index.ts';
import { HELPER_MAX_LANDLOCK_PATHS, WORKSPACE_PRIVATE_WRITE, WORKSPACE_SYSTEM_READ, workspaceHelperArgs, workspaceMounts } from '../../src/worker/workspace-plan.ts';
import { planStart } from '../../src/worker/start-plan.ts';
import { resolveSandbox } from '../../src/worker/sandbox-request.ts';
import { sessionUnitProperties } from '../../src/systemd/index.ts';
import { testConfig } from '../support/config-fixture.ts';

test('no Landlock arguments outside the workspace profile', () => {
  assert.equal(workspaceHelperArgs({ ...DEFAULT_SESSION, workspaceRead: ['/srv'] }, 'default', '/home/u'), []);
  assert.equal(workspaceHelperArgs(DEFAULT_SESSION, 'hardened', '/home/u'), []);
});

test('the workspace profile: the system read-only, /tmp and /var/tmp writable, then the operator\'s paths; never the home', () => {
  const args = workspaceHelperArgs({ ...DEFAULT_SESSION, workspaceRead: ['/nix/store'], workspaceWrite: ['/srv/cache'] }, 'workspace', '/home/u');
  // The home, which the helper checks is covered in the unit (the workspace's path is cwd-plan.ts's --cwd-path).
  assert.equal(args.slice(0, 2), ['--landlock', '--home-cover=/home/u']);
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-read=')), WORKSPACE_SYSTEM_READ.map((path) => `--landlock-read=${path}`));
  // The operator's are reached without following a symlink (the helper opens each component O_NOFOLLOW).
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-read-exact=')), ['--landlock-read-exact=/nix/store']);
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-write=')), ['--landlock-write=/tmp', '--landlock-write=/var/tmp', '--landlock-write=/srv/cache']);
  assert.not.ok(args.some((arg) => arg.startsWith('--landlock-') && (arg.includes('/home') || arg.endsWith('=/') || arg.includes('/run/user'))));
});

test('a working directory whose path PID 1 could not be given (ReadWritePaths=, BindPaths=) is refused (BAD_START)', () => {
  // Whitespace, ':', quotes, '\\' and control bytes: the hardened profile takes these (cwd-plan.ts), the workspace's unit cannot.
  for (const path of ['', 'relative', '/a\nb', '/back\\slash', '/with space', '/a:b', '/q"uote', '/home/u/My Project']) {
    assert.throws(() => workspaceMounts(DEFAULT_SESSION, 'workspace', path, '/home/u'), (error: unknown) => error instanceof SessionError && error.wireCode === ErrorCode.BAD_START && /^workspace refused: the working directory's path cannot be made writable by systemd/.test(error.message), JSON.stringify(path));
    // Not the hardened profile's concern: its unit carries no such path.
    assert.equal(workspaceMounts(DEFAULT_SESSION, 'hardened', path, '/home/u'), { writablePaths: [], boundPaths: [], readOnlyBinds: [] });
  }
});

test('PID 1 leaves writable the workspace by its path and the operator\'s write paths, under the workspace profile only', () => {
  assert.equal(workspaceMounts({ ...DEFAULT_SESSION, workspaceWrite: ['/srv/cache'] }, 'workspace', '/srv/proj', '/home/u'), { writablePaths: ['/srv/proj', '/srv/cache'], boundPaths: [], readOnlyBinds: [], homeCover: '/home/u' });
  assert.equal(workspaceMounts({ ...DEFAULT_SESSION, workspaceWrite: ['/srv/cache'] }, 'hardened', '/srv/proj', '/home/u'), { writablePaths: [], boundPaths: [], readOnlyBinds: [] });
});

test('the home is covered; a workspace under it is bound back, the operator\'s paths under it are not', () => {
  const session = { ...DEFAULT_SESSION, workspaceWrite: ['/srv/cache', '/home/u/.cache/x', '/home/u', '/home/uv'] };
  assert.equal(workspaceMounts(session, 'workspace', '/home/u/proj', '/home/u'), { writablePaths: ['/srv/cache', '/home/uv'], boundPaths: ['/home/u/proj'], readOnlyBinds: [], homeCover: '/home/u' });
  // Those root found under the home (workspace-look.ts) are bound back, writable or read-only as listed.
  const binds = [{ path: '/home/u/.cache/x', writable: true }, { path: '/home/u/.npm', writable: false }, { path: '/srv/elsewhere', writable: false }];
  assert.equal(workspaceMounts(session, 'workspace', '/srv/proj', '/home/u', binds), { writablePaths: ['/srv/proj', '/srv/cache', '/home/uv'], boundPaths: ['/home/u/.cache/x'], readOnlyBinds: ['/home/u/.npm'], homeCover: '/home/u' });
});

test('a home that cannot be covered (none, the root, not a plain path a unit file carries) refuses the workspace START', () => {
  for (const home of [undefined, '/', '', 'home/u', '/home/u/', '/home//u', '/home/./u', '/home/../u', '/home/a b', '/home/a:b']) {
    for (const call of [() => workspaceMounts(DEFAULT_SESSION, 'workspace', '/srv/proj', home), () => workspaceHelperArgs(DEFAULT_SESSION, 'workspace', home)]) {
      assert.throws(call, (error: unknown) => error instanceof SessionError && error.wireCode === ErrorCode.BAD_START && /home cannot be hidden/.test(error.message), String(home));
    }
  }
});

test('the most paths the configuration allows stay within the helper\'s bound', () => {
  const many = (prefix: string) => Array.from({ length: 32 }, (_, index) => `/${prefix}${index}`);
  const args = workspaceHelperArgs({ ...DEFAULT_SESSION, workspaceRead: many('r'), workspaceWrite: many('w') }, 'workspace', '/home/u');
  assert.is(args.filter((arg) => arg.startsWith('--landlock-')).length, WORKSPACE_SYSTEM_READ.length + WORKSPACE_PRIVATE_WRITE.length + 64);
  assert.ok(args.filter((arg) => arg.startsWith('--landlock-')).length <= HELPER_MAX_LANDLOCK_PATHS);
});

test("the START's own profile decides: a default floor and a START asking for workspace gives the helper its Landlock arguments", () => {
  const base = testConfig();
  const config = testConfig({ session: { ...DEFAULT_SESSION, minProfile: 'default' }, client: { ...base.client, home: '/home/agent' } });
  const frame = { type: 'start' as const, rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], profile: 'workspace' };
  const sandbox = resolveSandbox(frame, config.session);
  const { spec } = planStart(frame, config, '/usr/lib/helper', 4, [], sandbox, '/srv/proj');
  assert.is(spec.profile, 'workspace');
  assert.ok(spec.helperArgs.includes('--landlock'), JSON.stringify(spec.helperArgs));
  assert.ok(spec.helperArgs.includes('--cwd-path=/srv/proj'));
});

test('a workspace unit without the Landlock arguments is never built', () => {
  const config = testConfig({ session: { ...DEFAULT_SESSION } });
  const { spec } = planStart({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [] }, config, '/usr/lib/helper', 4);
  assert.throws(() => sessionUnitProperties({ ...spec, profile: 'workspace', cwdFd: 3, stdoutFd: 4, stderrFd: 5 } as never), /Landlock arguments/);
});

test.run();
