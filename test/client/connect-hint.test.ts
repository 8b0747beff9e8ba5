// A failed connect says what to do: EACCES names the socket group, the agent unit and the restart after
// an install; a missing socket points at status. Root passes every permission check, so EACCES itself
// is met in the sandbox (test/broker/broker.integration.ts); here the texts and the CONNECT error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectHint } from '../../src/client/connect-hint.ts';
import { ClientError } from '../../src/client/index.ts';
import { RuntimeSocket } from '../../src/client/runtime-socket.ts';

test('EACCES: the socket group, the agent unit, a restart after install', () => {
  const hint = connectHint('EACCES')!;
  assert.match(hint, 'socket\'s group (opencode-pty');
  assert.match(hint, "agent's service unit");
  assert.match(hint, 'restart');
  assert.match(hint, '--client-unit');
  assert.is(connectHint('EINVAL'), undefined);
  assert.is(connectHint(undefined), undefined);
});

test('a connect that fails carries errno and hint in a CONNECT error', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-hint-'));
  try {
    const error = await RuntimeSocket.connect(join(dir, 'absent.sock')).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    assert.instance(error, ClientError);
    assert.is((error as ClientError).code, 'CONNECT');
    assert.is((error as ClientError).errno, 'ENOENT');
    assert.match((error as ClientError).message, `: ENOENT; ${connectHint('ENOENT')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
