// Where the helper enters the working directory: by its path in the unit's own mount namespace
// (--cwd-path) under every profile that has one, decided by the START's own profile; none under default.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { ErrorCode, SessionError, type FrameOf } from '../../src/protocol/index.ts';
import { cwdHelperArgs, MAX_CWD_PATH_BYTES } from '../../src/worker/cwd-plan.ts';
import { planStart } from '../../src/worker/start-plan.ts';
import { resolveSandbox } from '../../src/worker/sandbox-request.ts';
import { warmUnitSpec } from '../../src/worker/warm-plan.ts';
import { testConfig } from '../support/config-fixture.ts';

const start = (profile?: string): FrameOf<'start'> => ({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], ...(profile ? { profile } : {}) });
const badStart = (pattern: RegExp) => (error: unknown) => error instanceof SessionError && error.wireCode === ErrorCode.BAD_START && pattern.test(error.message);

test('hardened and workspace enter the directory by its path; default (no namespace of its own) by the descriptor', () => {
  assert.equal(cwdHelperArgs('hardened', '/srv/proj'), ['--cwd-path=/srv/proj']);
  assert.equal(cwdHelperArgs('workspace', '/srv/proj'), ['--cwd-path=/srv/proj']);
  assert.equal(cwdHelperArgs('default', '/srv/proj'), []);
  // Under default nothing is judged: any path, none included.
  assert.equal(cwdHelperArgs('default', ''), []);
  assert.equal(cwdHelperArgs('default', '/with space'), []);
});

test('a path the helper could not be given is BAD_START naming the profile', () => {
  for (const profile of ['hardened', 'workspace'] as const) {
    for (const path of ['', 'relative', '/nul\0byte', '/gone (deleted)', `/${'x'.repeat(MAX_CWD_PATH_BYTES)}`]) {
      assert.throws(() => cwdHelperArgs(profile, path), badStart(new RegExp(`^${profile} refused: the working directory has no path the session could enter`)), `${profile} ${JSON.stringify(path.slice(0, 40))}`);
    }
  }
  // PATH_MAX counts bytes: the longest path open(2) takes passes; 2048 two-byte characters do not.
  const longest = `/${'x'.repeat(MAX_CWD_PATH_BYTES - 1)}`;
  assert.equal(cwdHelperArgs('hardened', longest), [`--cwd-path=${longest}`]);
  assert.throws(() => cwdHelperArgs('hardened', `/${'é'.repeat(2048)}`), badStart(/no path the session could enter/));
});

test('it is one argument of the helper, never unit-file text: whitespace, quotes, `:`, `\\`, `$`, `;`, `%`, `=` and line breaks pass whole', () => {
  for (const path of ['/home/u/My Project', '/srv/a:b', '/back\\slash', '/q"uote', "/q'uote", '/tab\there', '/a\nb', '/$HOME;x', '/100%', '/k=v', '/ --landlock', '/x --cwd-path=/etc']) {
    for (const profile of ['hardened', 'workspace'] as const) assert.equal(cwdHelperArgs(profile, path), [`--cwd-path=${path}`], JSON.stringify(path));
  }
});

test("the START's own profile decides, never the floor alone", () => {
  const floor = (minProfile: 'default' | 'hardened') => testConfig({ session: { ...DEFAULT_SESSION, minProfile } });
  const argsOf = (config: ReturnType<typeof floor>, frame: FrameOf<'start'>) =>
    planStart(frame, config, '/usr/lib/helper', 4, [], resolveSandbox(frame, config.session), '/srv/proj').spec.helperArgs;
  // A default floor: a START asking for hardened gets the path, one asking nothing does not.
  assert.ok(argsOf(floor('default'), start('hardened')).includes('--cwd-path=/srv/proj'));
  assert.not.ok(argsOf(floor('default'), start()).some((arg) => arg.startsWith('--cwd-path')));
  // A hardened floor: every START is at least hardened.
  assert.ok(argsOf(floor('hardened'), start()).includes('--cwd-path=/srv/proj'));
  // Without a resolved sandbox the floor is the profile (planStart's default).
  assert.ok(planStart(start(), floor('hardened'), '/usr/lib/helper', 4, [], undefined, '/srv/proj').spec.helperArgs.includes('--cwd-path=/srv/proj'));
  // Before the size and the program's argv, where the helper reads its options.
  const args = argsOf(floor('hardened'), start());
  assert.ok(args.indexOf('--cwd-path=/srv/proj') < args.indexOf('24'));
});

test('a hardened START in a directory named with a space and a colon is planned, its path one argument before the size', () => {
  const config = testConfig({ session: { ...DEFAULT_SESSION, minProfile: 'hardened' } });
  const args = planStart(start(), config, '/usr/lib/helper', 4, [], undefined, '/srv/My Project: 2').spec.helperArgs;
  assert.ok(args.indexOf('--cwd-path=/srv/My Project: 2') >= 0 && args.indexOf('--cwd-path=/srv/My Project: 2') < args.indexOf('24'));
  // The same directory under default is not judged.
  const plain = testConfig({ session: { ...DEFAULT_SESSION } });
  assert.not.ok(planStart(start(), plain, '/usr/lib/helper', 4, [], undefined, '/srv/my proj').spec.helperArgs.some((arg) => arg.startsWith('--cwd-path')));
});

test('a warm unit is started without a path (no START yet): its LAUNCH arguments, planned as any START\'s, carry it', () => {
  const config = testConfig({ session: { ...DEFAULT_SESSION, minProfile: 'hardened', warmUnits: 1 } });
  assert.equal(warmUnitSpec(config, '/usr/lib/helper').helperArgs, ['--warm']);
  assert.ok(planStart(start(), config, '/usr/lib/helper', 4, [], undefined, '/srv/proj').spec.helperArgs.includes('--cwd-path=/srv/proj'));
});

test.run();
