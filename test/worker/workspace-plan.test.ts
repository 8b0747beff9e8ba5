// The workspace profile's helper arguments: the system's read list, the private /tmp, the operator's paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { ErrorCode, SessionError } from '../../src/protocol/index.ts';
import { WORKSPACE_SYSTEM_READ, workspaceHelperArgs } from '../../src/worker/workspace-plan.ts';

test('no Landlock arguments outside the workspace profile', () => {
  assert.equal(workspaceHelperArgs({ ...DEFAULT_SESSION, profile: 'default', workspaceRead: ['/srv'] }, '/w'), []);
  assert.equal(workspaceHelperArgs({ ...DEFAULT_SESSION, profile: 'hardened' }, ''), []);
});

test('the workspace profile: the system read-only, /tmp and /var/tmp writable, then the operator\'s paths; never the home', () => {
  const args = workspaceHelperArgs({ ...DEFAULT_SESSION, profile: 'workspace', workspaceRead: ['/nix/store'], workspaceWrite: ['/srv/cache'] }, '/srv/proj');
  assert.equal(args.slice(0, 2), ['--landlock', '--workspace-path=/srv/proj']);
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-read=')), [...WORKSPACE_SYSTEM_READ, '/nix/store'].map((path) => `--landlock-read=${path}`));
  assert.equal(args.filter((arg) => arg.startsWith('--landlock-write=')), ['--landlock-write=/tmp', '--landlock-write=/var/tmp', '--landlock-write=/srv/cache']);
  assert.not.ok(args.some((arg) => arg.includes('/home') || arg.endsWith('=/') || arg.includes('/run/user')));
});

test('a working directory whose path the helper could not be given is refused (BAD_START)', () => {
  const session = { ...DEFAULT_SESSION, profile: 'workspace' as const };
  for (const path of ['', 'relative', '/a\nb', '/gone (deleted)', '/back\\slash']) {
    assert.throws(() => workspaceHelperArgs(session, path), (error: unknown) => error instanceof SessionError && error.wireCode === ErrorCode.BAD_START && /workspace refused/.test(error.message));
  }
});

test.run();
