// The workspace profile's helper arguments: the system's read list, the private /tmp, the operator's paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { ErrorCode, SessionError } from '../../src/protocol/index.ts';
import { HELPER_MAX_LANDLOCK_PATHS, WORKSPACE_PRIVATE_WRITE, WORKSPACE_SYSTEM_READ, workspaceHelperArgs, workspaceWritablePaths } from '../../src/worker/workspace-plan.ts';

test('no Landlock arguments outside the workspace profile', () => {
  assert.equal(workspaceHelperArgs({ ...DEFAULT_SESSION, profile: 'default', workspaceRead: ['/srv'] }, '/w'), []);
  assert.equal(workspaceHelperArgs({ ...DEFAULT_SESSION, profile: 'hardened' }, ''), []);
});

test('the workspace profile: the system read-only, /tmp and /var/tmp writable, then the operator\'s paths; never the home', () => {
  const args = workspaceHelperArgs({ ...DEFAULT_SESSION, profile: 'workspace', workspaceRead: ['/nix/store'], workspaceWrite: ['/srv/cache'] }, '/srv/proj');
  assert.equal(args.slice(0, 2), ['--landlock', '--workspace-path=/srv/proj']);
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-read=')), WORKSPACE_SYSTEM_READ.map((path) => `--landlock-read=${path}`));
  // The operator's are reached without following a symlink (the helper opens each component O_NOFOLLOW).
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-read-exact=')), ['--landlock-read-exact=/nix/store']);
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-write=')), ['--landlock-write=/tmp', '--landlock-write=/var/tmp', '--landlock-write=/srv/cache']);
  assert.not.ok(args.some((arg) => arg.includes('/home') || arg.endsWith('=/') || arg.includes('/run/user')));
});

test('a working directory whose path the helper could not be given is refused (BAD_START)', () => {
  const session = { ...DEFAULT_SESSION, profile: 'workspace' as const };
  // Also what PID 1 could not be given as ReadWritePaths= (whitespace, ':', quotes).
  for (const path of ['', 'relative', '/a\nb', '/gone (deleted)', '/back\\slash', '/with space', '/a:b', '/q"uote']) {
    assert.throws(() => workspaceHelperArgs(session, path), (error: unknown) => error instanceof SessionError && error.wireCode === ErrorCode.BAD_START && /workspace refused/.test(error.message));
  }
});

test('PID 1 leaves writable the workspace by its path and the operator\'s write paths, under the workspace profile only', () => {
  assert.equal(workspaceWritablePaths({ ...DEFAULT_SESSION, profile: 'workspace', workspaceWrite: ['/srv/cache'] }, '/srv/proj'), ['/srv/proj', '/srv/cache']);
  assert.equal(workspaceWritablePaths({ ...DEFAULT_SESSION, profile: 'hardened', workspaceWrite: ['/srv/cache'] }, '/srv/proj'), []);
});

test('the most paths the configuration allows stay within the helper\'s bound', () => {
  const many = (prefix: string) => Array.from({ length: 32 }, (_, index) => `/${prefix}${index}`);
  const args = workspaceHelperArgs({ ...DEFAULT_SESSION, profile: 'workspace', workspaceRead: many('r'), workspaceWrite: many('w') }, '/srv/proj');
  assert.is(args.filter((arg) => arg.startsWith('--landlock-')).length, WORKSPACE_SYSTEM_READ.length + WORKSPACE_PRIVATE_WRITE.length + 64);
  assert.ok(args.filter((arg) => arg.startsWith('--landlock-')).length <= HELPER_MAX_LANDLOCK_PATHS);
});

test.run();
