// Version 4 in the client library against a hand-driven server: START carries the profile, network and
// budgets asked for; a version 3 server makes them UNSUPPORTED with nothing sent; the server's PROFILE,
// BUDGET, NETWORK and NOT_ENFORCED come back as the client error of that name.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { ErrorCode } from '../../src/protocol/index.ts';
import { TestServer } from './test-server.ts';
import { handshaken, rejection } from '../support/client-server.ts';

test('version 4: START carries the profile, network mode and budgets; nothing asked sends the floor marker and no budget', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 4);
  const starting = rejection(client.start({ argv: ['sh'], cwd: server.dir, profile: 'hardened', network: 'off', budgets: { timeMs: 600_000, memoryBytes: 1 << 30 } }));
  const start = await conn.expect('start', 1);
  for (const fd of start.fds) closeSync(fd);
  assert.is(start.profile, 'hardened');
  assert.is(start.network, 'off');
  assert.equal(start.budgets, { timeMs: 600_000, memoryBytes: 1 << 30 });
  conn.send({ type: 'error', code: ErrorCode.NOT_ENFORCED, message: 'this host does not enforce the memory budget' });
  const error = await starting;
  assert.is(error.code, 'NOT_ENFORCED');
  assert.is(error.wireCode, 22);
  server.close();
});

test('version 4 refusals by name: PROFILE, BUDGET, NETWORK', async () => {
  const server = new TestServer();
  for (const [code, name] of [[ErrorCode.PROFILE, 'PROFILE'], [ErrorCode.BUDGET, 'BUDGET'], [ErrorCode.NETWORK, 'NETWORK']] as const) {
    const { client, conn } = await handshaken(server, 4);
    const starting = rejection(client.start({ argv: ['sh'], cwd: server.dir }));
    const start = await conn.expect('start', 1);
    for (const fd of start.fds) closeSync(fd);
    assert.is(start.profile, '');
    assert.equal(start.budgets, {});
    conn.send({ type: 'error', code, message: 'refused' });
    assert.is((await starting).code, name);
  }
  server.close();
});

test('a version 3 server: a profile, network mode or budget is UNSUPPORTED and sends nothing; a bad budget is BAD_START before sending', async () => {
  const server = new TestServer();
  const { client, conn } = await handshaken(server, 3);
  for (const asked of [{ profile: 'hardened' }, { network: 'off' as const }, { budgets: { tasks: 5 } }]) {
    const error = await rejection(client.start({ argv: ['sh'], cwd: server.dir, ...asked }));
    assert.is(error.code, 'UNSUPPORTED', JSON.stringify(asked));
    assert.match(error.message, 'needs protocol version 4; this server speaks version 3');
  }
  assert.ok(conn.nothingPending(), 'no START reached the server');
  const four = await handshaken(server, 4);
  assert.is((await rejection(four.client.start({ argv: ['sh'], cwd: server.dir, budgets: { memoryBytes: 0 } }))).code, 'BAD_START');
  server.close();
});

test.run();
