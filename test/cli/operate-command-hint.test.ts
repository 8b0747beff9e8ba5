// The next steps install prints name a command that runs this build: `opencode-ptyctl` only when that
// name on PATH is this very program; from a checkout (not on PATH) or with another copy on PATH, the
// installed copy by its Node and absolute path.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandHint, findOnPath, realCli } from '../../src/cli/command-hint.ts';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'opencode-pty-hint-')));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const installed = { node: '/usr/bin/node', cli: '/usr/lib/opencode-pty/current/cli.js' };

test('npm install -g: the name on PATH is a link to this cli.js, so the name is the command', () => {
  const dist = join(dir, 'global/lib/node_modules/opencode-pty-supervisor/dist');
  mkdirSync(dist, { recursive: true });
  writeFileSync(join(dist, 'cli.js'), '#!/usr/bin/env node\n');
  chmodSync(join(dist, 'cli.js'), 0o755);
  mkdirSync(join(dir, 'global/bin'));
  symlinkSync('../lib/node_modules/opencode-pty-supervisor/dist/cli.js', join(dir, 'global/bin/opencode-ptyctl'));
  const onPath = findOnPath('opencode-ptyctl', `relative/bin:/nonexistent:${join(dir, 'global/bin')}:/usr/bin`);
  assert.is(onPath, join(dist, 'cli.js'));
  assert.equal(commandHint(realCli(dist), onPath, installed), { command: 'opencode-ptyctl' });
});

test('from a checkout (not on PATH): the installed copy by Node and path, with a note saying why', () => {
  const checkout = join(dir, 'checkout/dist');
  mkdirSync(checkout, { recursive: true });
  writeFileSync(join(checkout, 'cli.js'), '');
  const hint = commandHint(realCli(checkout), findOnPath('opencode-ptyctl', '/nonexistent'), installed);
  assert.is(hint.command, '/usr/bin/node /usr/lib/opencode-pty/current/cli.js');
  assert.match(hint.note!, 'opencode-ptyctl is not on PATH');
});

test('another copy on PATH (an older global install): not the name, which would run the other build', () => {
  const hint = commandHint(realCli(join(dir, 'checkout/dist')), join(dir, 'global/lib/node_modules/opencode-pty-supervisor/dist/cli.js'), installed);
  assert.is(hint.command, '/usr/bin/node /usr/lib/opencode-pty/current/cli.js');
  assert.match(hint.note!, /opencode-ptyctl on PATH is another copy \(.*global.*\)/);
});

test.run();
