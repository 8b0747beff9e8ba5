// The shipped units: systemd-analyze verify accepts them under their installed names.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_SOCKET_GROUP } from '../../src/operate/layout.ts';
import { socketDropIn } from '../../src/operate/unit-files.ts';

const units = fileURLToPath(new URL('../../units/', import.meta.url));
const scratch = fileURLToPath(new URL('../../.sandbox/', import.meta.url));

test('systemd-analyze verify passes on the socket and the broker instance', () => {
  execFileSync('mkdir', ['-p', scratch]);
  const dir = mkdtempSync(join(scratch, 'units-'));
  try {
    copyFileSync(join(units, 'supervisor.socket'), join(dir, 'opencode-pty-supervisor.socket'));
    copyFileSync(join(units, 'supervisor@.service'), join(dir, 'opencode-pty-supervisor@.service'));
    const result = spawnSync(
      'systemd-analyze',
      ['verify', '--man=no', join(dir, 'opencode-pty-supervisor.socket'), join(dir, 'opencode-pty-supervisor@broker.service')],
      { encoding: 'utf8', env: { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:` } },
    );
    assert.is(result.status, 0, result.stderr);
    assert.is(result.stderr.trim(), '', result.stderr);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('the socket names the broker instance explicitly, mode 0660', () => {
  const socket = readFileSync(join(units, 'supervisor.socket'), 'utf8');
  assert.match(socket, /^Service=opencode-pty-supervisor@broker\.service$/m);
  assert.match(socket, /^SocketMode=0660$/m);
  assert.match(socket, /^ListenStream=\/run\/opencode-pty\/supervisor\.sock$/m);
});

test('the socket\'s group comes from the installer\'s drop-in: the config\'s socketGroup, as the socket unit says', () => {
  const socket = readFileSync(join(units, 'supervisor.socket'), 'utf8');
  assert.not.match(socket, /^SocketGroup=/m, 'the group is the drop-in\'s alone');
  assert.match(socket, /SocketGroup= set to the config's socketGroup/);
  assert.not.match(socket, /client account's group\./, 'the group is not the client account\'s');
  assert.match(socketDropIn(DEFAULT_SOCKET_GROUP), /^SocketGroup=opencode-pty$/m);
});

test('the broker runs with no capabilities and is stopped by SIGTERM to it alone', () => {
  const service = readFileSync(join(units, 'supervisor@.service'), 'utf8');
  assert.match(service, /^CapabilityBoundingSet=$/m);
  assert.match(service, /^KillMode=mixed$/m);
  assert.match(service, /^Type=notify$/m);
});

test.run();
