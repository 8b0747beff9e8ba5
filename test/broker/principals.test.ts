// Who may ask what: every request against every kind of peer (root, the MainPID, another process of
// the client's unit), and the reasons a refused one reads.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/index.ts';
import { KEPT_REFUSED, PRINCIPALS, ROOT_PTRACE_REFUSED, ROOT_START_REFUSED, decide, principalNeedsMainPid, principalNeedsPtrace, type Principal, type Request } from '../../src/broker/principals.ts';

const CLIENT = 1500;
const root = { uid: 0, clientUid: CLIENT, mainPid: false, ptrace: true };
/** A uid-0 process without CAP_SYS_PTRACE (a root service with its capabilities dropped). */
const rootWithout = { uid: 0, clientUid: CLIENT, mainPid: false, ptrace: false };
const main = { uid: CLIENT, clientUid: CLIENT, mainPid: true, ptrace: false };
const child = { uid: CLIENT, clientUid: CLIENT, mainPid: false, ptrace: false };
const stranger = { uid: 1700, clientUid: CLIENT, mainPid: false, ptrace: false };
const REQUESTS: Request[] = ['start', 'list', 'attach', 'stop-session'];

test('the table: root lists, attaches and stops but never starts; the MainPID does all; a child of the unit only starts', () => {
  const expected: Record<string, Record<Request, boolean>> = {
    root: { start: false, list: true, attach: true, 'stop-session': true },
    rootWithout: { start: false, list: false, attach: false, 'stop-session': false },
    main: { start: true, list: true, attach: true, 'stop-session': true },
    child: { start: true, list: false, attach: false, 'stop-session': false },
    stranger: { start: false, list: false, attach: false, 'stop-session': false },
  };
  const peers = { root, rootWithout, main, child, stranger };
  for (const [name, facts] of Object.entries(peers)) {
    for (const request of REQUESTS) assert.is(decide(request, facts).allowed, expected[name]![request], `${name} ${request}`);
  }
});

test('refusals are NOT_PERMITTED with the reason a peer can act on', () => {
  assert.equal(decide('start', root), { allowed: false, code: ErrorCode.NOT_PERMITTED, message: ROOT_START_REFUSED });
  assert.equal(decide('attach', child), { allowed: false, code: ErrorCode.NOT_PERMITTED, message: KEPT_REFUSED });
  assert.equal(decide('list', stranger), { allowed: false, code: ErrorCode.NOT_PERMITTED, message: KEPT_REFUSED });
  for (const request of ['list', 'attach', 'stop-session'] as const) {
    assert.equal(decide(request, rootWithout), { allowed: false, code: ErrorCode.NOT_PERMITTED, message: ROOT_PTRACE_REFUSED });
  }
  assert.equal(decide('start', rootWithout), { allowed: false, code: ErrorCode.NOT_PERMITTED, message: ROOT_START_REFUSED });
});

test('the capabilities are read only where they decide: root asking for a kept session', () => {
  assert.not.ok(principalNeedsPtrace('start', 0));
  for (const request of ['list', 'attach', 'stop-session'] as const) {
    assert.ok(principalNeedsPtrace(request, 0));
    assert.not.ok(principalNeedsPtrace(request, CLIENT));
  }
});

test('root sees every kept session, the MainPID its service\'s', () => {
  const seen = (facts: typeof root) => {
    const decision = decide('list', facts);
    return decision.allowed ? decision.principal.sees : undefined;
  };
  assert.is(seen(root), 'every');
  assert.is(seen(main), 'service');
});

test('the MainPID look is asked for only where it decides: a client-account peer asking for a kept session', () => {
  assert.not.ok(principalNeedsMainPid('start', CLIENT, CLIENT));
  for (const request of ['list', 'attach', 'stop-session'] as const) {
    assert.ok(principalNeedsMainPid(request, CLIENT, CLIENT));
    assert.not.ok(principalNeedsMainPid(request, 0, CLIENT));
    assert.not.ok(principalNeedsMainPid(request, 1700, CLIENT));
  }
});

test('one more principal is one more entry (a front the supervisor starts, say)', () => {
  const front: Principal = { name: 'unit-process', matches: (facts) => facts.uid === 1234, may: new Set(['list', 'attach']), sees: 'service' };
  const principals = [front, ...PRINCIPALS];
  assert.ok(decide('attach', { uid: 1234, clientUid: CLIENT, mainPid: false, ptrace: false }, principals).allowed);
  assert.not.ok(decide('stop-session', { uid: 1234, clientUid: CLIENT, mainPid: false, ptrace: false }, principals).allowed);
  assert.not.ok(decide('attach', { uid: 1234, clientUid: CLIENT, mainPid: false, ptrace: false }).allowed);
});

test.run();
