// Which directories may be a workspace, judged on device and inode keys alone (the facts are built by
// hand here; workspace-refusal.integration.ts reads them from real descriptors).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judgeWorkspace, PROTECTED_IN_HOME, PSEUDO_FILE_SYSTEMS, type NamedTree, type WorkspaceFacts } from '../../src/worker/workspace-check.ts';
import { fsTypeOf } from '../../src/worker/workspace-look.ts';

// A tree: / (r), /home (h), /home/u (u), /home/u/.config (c), /home/u/.config/systemd (cs),
// /home/u/.local (l), /home/u/.local/bin missing, /home/u/proj (p), /home/u/proj/sub (ps), /srv (s).
const named: NamedTree[] = [
  { name: '/dev', key: 'd', ancestors: ['r'] },
  { name: '/run/user/1000', ancestors: ['r', 'run'] },
  { name: '~', key: 'u', ancestors: ['r', 'h'] },
  { name: '~/.config', key: 'c', ancestors: ['r', 'h', 'u'] },
  { name: '~/.local/bin', ancestors: ['r', 'h', 'u', 'l'] },
];
const facts = (chain: string[], fsType: string | undefined = 'ext4', trees = named): WorkspaceFacts => ({ fsType, chain, named: trees });

test('a project below the home, or elsewhere, may be a workspace', () => {
  assert.is(judgeWorkspace(facts(['p', 'u', 'h', 'r'])), undefined);
  assert.is(judgeWorkspace(facts(['ps', 'p', 'u', 'h', 'r'])), undefined);
  assert.is(judgeWorkspace(facts(['s', 'r'])), undefined);
});

test('the root, the home and its ancestors are refused', () => {
  assert.match(judgeWorkspace(facts(['r']))!, 'root directory');
  assert.match(judgeWorkspace(facts(['u', 'h', 'r']))!, 'is ~');
  assert.match(judgeWorkspace(facts(['h', 'r']))!, 'ancestor of');
});

test('a protected tree, anything inside it, and an ancestor of one that does not exist yet are refused', () => {
  assert.match(judgeWorkspace(facts(['c', 'u', 'h', 'r']))!, 'is ~/.config');
  assert.match(judgeWorkspace(facts(['cs', 'c', 'u', 'h', 'r']))!, 'inside ~/.config');
  // ~/.local writable could make ~/.local/bin.
  assert.match(judgeWorkspace(facts(['l', 'u', 'h', 'r']))!, 'ancestor of ~/.local/bin');
  assert.match(judgeWorkspace(facts(['run', 'r']))!, 'ancestor of /run/user/1000');
  assert.match(judgeWorkspace(facts(['dx', 'd', 'r']))!, 'inside /dev');
});

test('pseudo file systems, an unseen file system and a tree that cannot be resolved are refused', () => {
  for (const type of ['proc', 'sysfs', 'cgroup2', 'devtmpfs']) {
    assert.ok(PSEUDO_FILE_SYSTEMS.has(type));
    assert.match(judgeWorkspace(facts(['x', 'r'], type))!, `pseudo file system (${type})`);
  }
  assert.match(judgeWorkspace({ ...facts(['x', 'r']), fsType: undefined })!, 'cannot see');
  assert.match(judgeWorkspace(facts(['p', 'u', 'h', 'r'], 'ext4', [...named, { name: '~/.ssh', ancestors: ['r', 'h', 'u'], problem: '.ssh is a symlink or not a directory' }]))!, '~/.ssh cannot be judged: .ssh is a symlink');
  assert.match(judgeWorkspace(facts([]))!, 'cannot be examined');
});

test('a home that does not resolve refuses every workspace (its checks would pass unseen)', () => {
  const homeless = named.map((tree) => (tree.name === '~' ? { name: '~', ancestors: ['r', 'h'] } : tree));
  assert.match(judgeWorkspace(facts(['p', 'u', 'h', 'r'], 'ext4', homeless))!, "the account's home cannot be found");
  assert.match(judgeWorkspace(facts(['s', 'r'], 'ext4', homeless))!, "the account's home cannot be found");
});

test('the trees that run code or hold credentials later are among the protected ones', () => {
  for (const name of ['bin', '.local/bin', '.local/lib', '.cargo/bin', '.docker', '.aws', '.kube', '.vim', '.emacs.d', '.config', '.ssh', '.gnupg']) assert.ok(PROTECTED_IN_HOME.includes(name), name);
});

test("a device's file system type from mountinfo, none for a device not mounted here", () => {
  const mountinfo = ['22 1 0:21 / /proc rw,nosuid - proc proc rw', '25 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw', ''].join('\n');
  assert.is(fsTypeOf('0:21', mountinfo), 'proc');
  assert.is(fsTypeOf('259:2', mountinfo), 'ext4');
  assert.is(fsTypeOf('0:99', mountinfo), undefined);
});

test.run();
