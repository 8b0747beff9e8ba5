// Unit tests of the argv that runs a command inside the sandbox.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execArgv, SANDBOX_GUARD } from './exec.ts';
import { CLIENT, OTHER } from './seed.ts';

const accounts = { client: CLIENT, other: OTHER };
const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

test('root: every namespace of PID 1, a death signal, a clean environment', () => {
  assert.equal(execArgv(7, ['id'], {}, accounts), [
    'nsenter', '--target', '7', '--all', '--root', '--wd', '--',
    ...SANDBOX_GUARD,
    'setpriv', '--pdeathsig', 'KILL', '--',
    'env', '-i', '--chdir', '/', PATH, 'HOME=/root', 'USER=root', 'LOGNAME=root', 'SHELL=/bin/bash', 'LANG=C.UTF-8', 'id',
  ]);
});

test('an account: its uid, gid and groups, its home', () => {
  const argv = execArgv(7, ['id'], { as: 'client', env: { A: 'b' }, cwd: '/tmp' }, accounts);
  const setpriv = argv.slice(argv.indexOf('setpriv'), argv.indexOf('env'));
  assert.equal(setpriv, ['setpriv', '--pdeathsig', 'KILL', '--reuid', '4242', '--regid', '4242', '--init-groups', '--']);
  assert.equal(argv.slice(argv.indexOf('env')), ['env', '-i', '--chdir', '/tmp', PATH, 'HOME=/home/ocpty-client', 'USER=ocpty-client', 'LOGNAME=ocpty-client', 'SHELL=/bin/bash', 'LANG=C.UTF-8', 'A=b', 'id']);
});

test('another gid drops the supplementary groups', () => {
  const argv = execArgv(7, ['id'], { as: 'client', gid: 4243 }, accounts);
  assert.ok(argv.includes('--clear-groups'));
  assert.equal(argv.slice(argv.indexOf('--reuid'), argv.indexOf('--reuid') + 4), ['--reuid', '4242', '--regid', '4243']);
});

test('the guard refuses to run anything where the sandbox marker is missing (as on the host)', async () => {
  const { spawnSync } = await import('node:child_process');
  const run = spawnSync(SANDBOX_GUARD[0]!, [...SANDBOX_GUARD.slice(1), 'echo', 'ran'], { encoding: 'utf8' });
  assert.is(run.status, 125);
  assert.is(run.stdout, '');
  assert.match(run.stderr, 'not inside the test sandbox');
});

test.run();
