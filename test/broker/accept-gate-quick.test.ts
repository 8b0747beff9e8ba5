// AcceptGate.quick (accept-gate.ts): the refusals decided at accept from what is known, with the code
// and text the full checks gave; the MainPID, root, an admissible peer and a peer judged against an
// older read of the client service always go through the full checks.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { ADMISSION_REFUSED, AcceptGate, OUTSIDE_UNIT_REFUSED, WRONG_ACCOUNT_REFUSED } from '../../src/broker/accept-gate.ts';
import { Admission } from '../../src/broker/admission.ts';
import type { AcceptedConnection } from '../../src/broker/accept-order.ts';
import type { ClientService } from '../../src/identity/client-service.ts';
import type { Config } from '../../src/config/schema.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode } from '../../src/protocol/index.ts';

const SERVICE = 'agent.service';
const me = { pid: process.pid, uid: process.getuid!(), gid: process.getgid!() };
const config = { requireClientUnit: true, client: { uid: me.uid, gid: me.gid, service: SERVICE } } as unknown as Config;
const connection = (credentials = me): AcceptedConnection => ({ fd: -1, credentials });

/** A client service whose answers the test sets; `latest` stands for its latest read. */
function fakeService(inside: boolean) {
  const state = { latest: { read: 1 } as object, mainPid: undefined as number | undefined, full: 0, freshened: 0 };
  const service = {
    service: SERVICE,
    get latest() {
      return state.latest;
    },
    get latestMainPid() {
      return state.mainPid;
    },
    freshen: () => (state.freshened += 1),
    plausible: () => (state.full += 1, inside),
    containsProvisionally: () => Promise.resolve({ inside, snapshot: state.latest, confirmed: Promise.resolve({ inside }) }),
    isMainPid: () => Promise.resolve({ main: false, snapshot: state.latest }),
  } as unknown as ClientService;
  return { service, state };
}

/** decide() over a real socketpair: this process is the peer. */
async function decide(gate: AcceptGate) {
  const [a, b] = native().socketpair();
  try {
    return await gate.decide(a);
  } finally {
    closeSync(a);
    closeSync(b);
  }
}

test('an outside peer: once refused by the full checks, its next connections are refused at once with the same code and text', async () => {
  const { service, state } = fakeService(false);
  const gate = new AcceptGate({ config, admission: new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 120 }), service });
  assert.is(gate.quick(connection()), undefined, 'nothing known yet');
  const full = await decide(gate);
  assert.is(full.admitted, false);
  const quick = gate.quick(connection());
  assert.ok(quick);
  assert.is(quick.code, ErrorCode.AUTHENTICATION);
  assert.is(quick.message, OUTSIDE_UNIT_REFUSED);
  assert.is(full.admitted === false && full.message, quick.message);
  assert.is(state.full, 1, 'no second full check');
  assert.ok(state.freshened > 0, 'a stale read is renewed in the background');
  // A newer read of the service forgets it: the full checks again.
  state.latest = { read: 2 };
  assert.is(gate.quick(connection()), undefined);
});

test('an inside peer that is not the MainPID: refused at once only while only the reserved slot is free', async () => {
  const { service, state } = fakeService(true);
  const admission = new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 0 });
  const gate = new AcceptGate({ config, admission, service });
  const full = await decide(gate);
  assert.is(full.admitted, false);
  if (full.admitted) return;
  assert.is(full.code, ErrorCode.ADMISSION);
  const quick = gate.quick(connection());
  assert.ok(quick);
  assert.is(quick.code, ErrorCode.ADMISSION);
  assert.is(quick.message, ADMISSION_REFUSED);
  // The MainPID by the latest read is never refused from memory: its reserved slot is in the full checks.
  state.mainPid = me.pid;
  assert.is(gate.quick(connection()), undefined);
});

test('an inside peer is not remembered while it could be admitted, nor when it was judged against an older read', async () => {
  const { service } = fakeService(true);
  const open = new AcceptGate({ config, admission: new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 120 }), service });
  const admitted = await decide(open);
  assert.is(admitted.admitted, true);
  assert.is(open.quick(connection()), undefined);
  // The full checks used a read that is no longer the latest when they end.
  const older = fakeService(true);
  const stale = { ...older.service, isMainPid: () => Promise.resolve({ main: false, snapshot: { read: 0 } }) } as unknown as ClientService;
  Object.defineProperty(stale, 'latest', { get: () => older.state.latest });
  Object.defineProperty(stale, 'latestMainPid', { get: () => undefined });
  const gate = new AcceptGate({ config, admission: new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 0 }), service: stale });
  assert.is((await decide(gate)).admitted, false);
  assert.is(gate.quick(connection()), undefined);
});

test('a wrong account and unreadable credentials are refused at once; root is left to the full checks', () => {
  const { service } = fakeService(true);
  const gate = new AcceptGate({ config, admission: new Admission({ maxUnauthenticated: 32, maxAdmissionsPerMinute: 120 }), service, admitRoot: true });
  const wrong = gate.quick(connection({ pid: 5, uid: me.uid + 1, gid: me.gid }));
  assert.is(wrong?.code, ErrorCode.AUTHENTICATION);
  assert.is(wrong?.message, WRONG_ACCOUNT_REFUSED);
  const unknown = gate.quick({ fd: -1, credentials: undefined, credentialsError: 107 });
  assert.is(unknown?.code, ErrorCode.INTERNAL);
  assert.is(gate.quick(connection({ pid: 1, uid: 0, gid: 0 })), undefined);
});

test.run();
