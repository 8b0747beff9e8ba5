// The listener made by hand (no socket activation): the careful way, or not at all.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkSocketPermissions, createListener, ListenerError, probeSocket, takeSystemdListener } from '../../src/broker/listener.ts';
import { native } from '../../src/native/binding.ts';

const scratchRoot = fileURLToPath(new URL('../../.sandbox/', import.meta.url));
mkdirSync(scratchRoot, { recursive: true });
const scratch = mkdtempSync(join(scratchRoot, 'listener-'));
chmodSync(scratch, 0o755);
const GID = 4321;

function refuses(path: string, message: RegExp): void {
  try {
    closeSync(createListener(path, GID).fd);
  } catch (error) {
    assert.instance(error, ListenerError);
    assert.match((error as Error).message, message);
    return;
  }
  assert.unreachable(`${path} was accepted`);
}

test('creates the socket with mode 0660 and the client group, never wider', () => {
  const path = join(scratch, 'a.sock');
  const listener = createListener(path, GID);
  const stat = lstatSync(path);
  assert.ok(stat.isSocket());
  assert.is(stat.mode & 0o777, 0o660);
  assert.is(stat.gid, GID);
  assert.is(stat.uid, 0);
  assert.is(listener.fromSystemd, false);
  const client = native().connectUnix(path);
  assert.ok(native().accept(listener.fd) >= 0);
  closeSync(client);
  closeSync(listener.fd);
});

test('a stale socket is replaced; a live one, a file or a symlink are refused', () => {
  const stale = join(scratch, 'stale.sock');
  closeSync(createListener(stale, GID).fd);
  const replaced = createListener(stale, GID);
  refuses(stale, /another process is listening/);
  closeSync(replaced.fd);
  const file = join(scratch, 'file');
  writeFileSync(file, '');
  refuses(file, /not a socket/);
  const link = join(scratch, 'link.sock');
  symlinkSync(stale, link);
  refuses(link, /not a socket/);
});

test('a live listener whose backlog is full (EAGAIN on connect) is not taken for stale', () => {
  const path = join(scratch, 'full.sock');
  const live = native().listenUnix(path, 0);
  // Backlog 0 queues one connection; the next non-blocking connect fails with EAGAIN (unix(7)).
  const queued: number[] = [];
  let refusedWith: string | undefined;
  for (let i = 0; i < 4 && !refusedWith; i += 1) {
    try {
      queued.push(native().connectUnix(path));
    } catch (error) {
      refusedWith = (error as { code?: string }).code;
    }
  }
  assert.is(refusedWith, 'EAGAIN');
  refuses(path, /another process is listening/);
  assert.ok(lstatSync(path).isSocket(), 'the live socket is still there');
  for (const fd of [...queued, live]) closeSync(fd);
});

test('the probe: only ECONNREFUSED means stale', () => {
  const failing = (code: string) => () => {
    throw Object.assign(new Error(code), { code });
  };
  assert.is(probeSocket('x', failing('ECONNREFUSED')), 'stale');
  assert.is(probeSocket('x', failing('EAGAIN')), 'live');
  assert.is(probeSocket('x', failing('EACCES')), 'live');
});

test('the parent must be a root-owned directory only root can write', () => {
  const open = join(scratch, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  refuses(join(open, 'x.sock'), /writable only by root/);
  refuses(join(scratch, 'missing', 'x.sock'), /is not a directory/);
});

test('systemd passes the socket only to the PID it names; LISTEN_* are cleared either way', () => {
  const env: NodeJS.ProcessEnv = { LISTEN_PID: String(process.pid + 1), LISTEN_FDS: '1', LISTEN_FDNAMES: 'x' };
  assert.is(takeSystemdListener(env), undefined);
  assert.equal(env, {});
});

test('the socket systemd passed must have the configured group and mode 0660; one made here is not checked again', () => {
  const path = join(scratch, 'passed.sock');
  const made = createListener(path, GID);
  const passed = { fd: made.fd, fromSystemd: true };
  const config = { socketPath: path, socketGid: GID, socketGroup: 'agents' };
  checkSocketPermissions(passed, config);
  const mismatch = (change: () => void, expected: RegExp) => {
    change();
    try {
      checkSocketPermissions(passed, config);
      assert.unreachable('accepted');
    } catch (error) {
      assert.instance(error, ListenerError);
      assert.match((error as Error).message, expected);
    }
  };
  mismatch(() => chmodSync(path, 0o666), /must be mode 0660 with group agents \(gid 4321\); it has gid 4321 mode 666/);
  chmodSync(path, 0o660);
  mismatch(() => (config.socketGid = GID + 1), /must be mode 0660 with group agents \(gid 4322\); it has gid 4321 mode 660/);
  checkSocketPermissions({ fd: made.fd, fromSystemd: false }, config);
  const file = join(scratch, 'not-a-socket');
  writeFileSync(file, '');
  mismatch(() => (config.socketPath = file), /is not the socket systemd passed/);
  closeSync(made.fd);
});

test('the broker refuses to run as anyone but root', () => {
  const broker = fileURLToPath(new URL('../../dist/broker.cjs', import.meta.url));
  const run = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, broker], { encoding: 'utf8' });
  // A start that cannot succeed: the status its unit is not restarted on (RestartPreventExitStatus=78).
  assert.is(run.status, 78);
  assert.match(run.stderr, 'supervisor must run as root');
});

test.after(() => rmSync(scratch, { recursive: true }));

test.run();
