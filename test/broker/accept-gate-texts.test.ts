// What a refused peer reads at accept: the reason it can act on (not the client account; not inside the
// agent's unit), and nothing it may not learn (the configured account, the unit's name, its cgroup).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { AcceptGate, OUTSIDE_UNIT_REFUSED, WRONG_ACCOUNT_REFUSED } from '../../src/broker/accept-gate.ts';
import { Admission } from '../../src/broker/admission.ts';
import type { ClientService } from '../../src/identity/client-service.ts';
import type { Config } from '../../src/config/schema.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode } from '../../src/protocol/index.ts';

const SECRET_UNIT = 'secret-agent-name.service';

async function decide(config: Config, service?: ClientService) {
  const gate = new AcceptGate({ config, admission: new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 120 }), service });
  const [a, b] = native().socketpair();
  try {
    return await gate.decide(a);
  } finally {
    closeSync(a);
    closeSync(b);
  }
}

test('another account reads "not the client account", with no word of which account is served', async () => {
  // This process is the peer; the configured account is another one.
  const config = { requireClientUnit: true, client: { uid: 4321, gid: 4321, service: SECRET_UNIT } } as unknown as Config;
  const result = await decide(config);
  assert.is(result.admitted, false);
  if (result.admitted) return;
  assert.is(result.code, ErrorCode.AUTHENTICATION);
  assert.is(result.message, WRONG_ACCOUNT_REFUSED);
  assert.is(result.message, 'authentication failed: not the client account');
  assert.not.match(result.message, '4321');
  assert.not.match(result.message, 'admission');
  assert.is(result.reason, 'not the client account', 'the journal has it too');
});

test("the right account outside the unit reads \"not inside the agent's service unit\"; the journal names the unit and the cgroup", async () => {
  const config = { requireClientUnit: true, client: { uid: process.getuid!(), gid: process.getgid!(), service: SECRET_UNIT } } as unknown as Config;
  const service = { service: SECRET_UNIT, plausible: () => false } as unknown as ClientService;
  const result = await decide(config, service);
  assert.is(result.admitted, false);
  if (result.admitted) return;
  assert.is(result.code, ErrorCode.AUTHENTICATION);
  assert.is(result.message, OUTSIDE_UNIT_REFUSED);
  assert.not.match(result.message, SECRET_UNIT);
  assert.not.match(result.message, '/');
  assert.match(result.reason, `not inside ${SECRET_UNIT}`);
});

test.run();
