// The pure parts of keeping .git read-only: a gitdir: pointer's target, and which paths systemd 252 can
// carry in BindReadOnlyPaths= (it escapes only '%' there, and its parser splits on whitespace and ':').
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bindablePath, gitPointerTarget } from '../../src/worker/git-look.ts';

test('a gitdir: pointer names its target, with or without a line end; anything else is no pointer', () => {
  assert.is(gitPointerTarget('gitdir: /srv/repo/.git/worktrees/x\n'), '/srv/repo/.git/worktrees/x');
  assert.is(gitPointerTarget('gitdir: ../.git/modules/sub'), '../.git/modules/sub');
  assert.is(gitPointerTarget('gitdir: /a\r\n'), '/a');
  for (const text of ['', 'gitdir:', 'gitdir: \n', 'ref: refs/heads/main\n', 'gitdir: /a\nmore\n', 'x gitdir: /a']) assert.is(gitPointerTarget(text), undefined, text);
});

test('paths with whitespace, colons, quotes or backslashes cannot be bound; plain ones can', () => {
  assert.ok(bindablePath('/home/u/project/.git'));
  assert.ok(bindablePath('/srv/ünïcode/.git'));
  for (const path of ['relative/.git', '/a b/.git', '/a:b/.git', '/a"b', "/a'b", '/a\\b', '/a\nb', '/a\tb', '/gone (deleted)']) assert.not.ok(bindablePath(path), path);
});

test.run();
