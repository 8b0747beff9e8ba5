// The workspace profile's helper arguments: the system's read list, the private /tmp, the operator's paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { HELPER_MAX_LANDLOCK_PATHS, WORKSPACE_PRIVATE_WRITE, WORKSPACE_SYSTEM_READ, workspaceHelperArgs, workspaceWritablePaths } from '../../src/worker/workspace-plan.ts';
import { planStart } from '../../src/worker/start-plan.ts';
import { resolveSandbox } from '../../src/worker/sandbox-request.ts';
import { sessionUnitProperties } from '../../src/systemd/index.ts';
import { testConfig } from '../support/config-fixture.ts';

test('no Landlock arguments outside the workspace profile', () => {
  assert.equal(workspaceHelperArgs({ ...DEFAULT_SESSION, workspaceRead: ['/srv'] }, 'default'), []);
  assert.equal(workspaceHelperArgs(DEFAULT_SESSION, 'hardened'), []);
});

test('the workspace profile: the system read-only, /tmp and /var/tmp writable, then the operator\'s paths; never the home', () => {
  const args = workspaceHelperArgs({ ...DEFAULT_SESSION, workspaceRead: ['/nix/store'], workspaceWrite: ['/srv/cache'] }, 'workspace');
  assert.equal(args[0], '--landlock');
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-read=')), WORKSPACE_SYSTEM_READ.map((path) => `--landlock-read=${path}`));
  // The operator's are reached without following a symlink (the helper opens each component O_NOFOLLOW).
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-read-exact=')), ['--landlock-read-exact=/nix/store']);
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-write=')), ['--landlock-write=/tmp', '--landlock-write=/var/tmp', '--landlock-write=/srv/cache']);
  assert.not.ok(args.some((arg) => arg.includes('/home') || arg.endsWith('=/') || arg.includes('/run/user')));
});

test('PID 1 leaves writable the workspace by its path and the operator\'s write paths, under the workspace profile only', () => {
  assert.equal(workspaceWritablePaths({ ...DEFAULT_SESSION, workspaceWrite: ['/srv/cache'] }, 'workspace', '/srv/proj'), ['/srv/proj', '/srv/cache']);
  assert.equal(workspaceWritablePaths({ ...DEFAULT_SESSION, workspaceWrite: ['/srv/cache'] }, 'hardened', '/srv/proj'), []);
});

test('the most paths the configuration allows stay within the helper\'s bound', () => {
  const many = (prefix: string) => Array.from({ length: 32 }, (_, index) => `/${prefix}${index}`);
  const args = workspaceHelperArgs({ ...DEFAULT_SESSION, workspaceRead: many('r'), workspaceWrite: many('w') }, 'workspace');
  assert.is(args.filter((arg) => arg.startsWith('--landlock-')).length, WORKSPACE_SYSTEM_READ.length + WORKSPACE_PRIVATE_WRITE.length + 64);
  assert.ok(args.filter((arg) => arg.startsWith('--landlock-')).length <= HELPER_MAX_LANDLOCK_PATHS);
});

test("the START's own profile decides: a default floor and a START asking for workspace gives the helper its Landlock arguments", () => {
  const config = testConfig({ session: { ...DEFAULT_SESSION, minProfile: 'default' } });
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
