// The node-pty face's profile, network and budgets options (checked before anything is sent), and how a
// session a budget ended reaches onExit (docs/client.md "How a session ends").
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ClientError } from '../../src/client/client-error.ts';
import { exitEvent } from '../../src/client/node-pty/exit-shape.ts';
import { resolveOptions } from '../../src/client/node-pty/options.ts';
import type { SessionEnd } from '../../src/client/session.ts';

const end = (fields: Partial<SessionEnd>): SessionEnd => ({ reason: 'exit', code: 1, status: 0, result: 'success', ...fields }) as SessionEnd;

test('spawn options: profile, network and budgets pass as given; nothing given asks nothing', () => {
  const options = resolveOptions('make', [], { profile: 'workspace', network: 'off', budgets: { timeMs: 600_000, memoryBytes: 1 << 30 } }, {});
  assert.equal(options.sandbox, { profile: 'workspace', network: 'off', budgets: { timeMs: 600_000, memoryBytes: 1 << 30 } });
  assert.equal(resolveOptions('make', [], {}, {}).sandbox, {});
});

test('spawn options: a bad profile, network or budget is INVALID_ARGUMENT (0, negative, fractional, 2^64, unknown budget)', () => {
  const bad = [
    { profile: '' }, { profile: 'Work' }, { profile: 7 }, { network: 'loopback' }, { budgets: { tasks: 0 } }, { budgets: { tasks: -1 } },
    { budgets: { cpuPercent: 0.5 } }, { budgets: { memoryBytes: 2 ** 64 } }, { budgets: { disk: 1 } }, { budgets: 5 },
  ];
  for (const options of bad) {
    try {
      resolveOptions('make', [], options, {});
      assert.unreachable(JSON.stringify(options));
    } catch (error) {
      assert.instance(error, ClientError, JSON.stringify(options));
      assert.is((error as ClientError).code, 'INVALID_ARGUMENT', JSON.stringify(options));
    }
  }
});

test('onExit: the wall clock is exitCode 124 with the signal that ended the program; an OOM kill is 137 and signal 9', () => {
  assert.equal(exitEvent(end({ code: 2, status: 15, result: 'timeout' })), { exitCode: 124, signal: 15 });
  assert.equal(exitEvent(end({ code: 1, status: 0, result: 'timeout' })), { exitCode: 124, signal: 0 });
  assert.equal(exitEvent(end({ code: 2, status: 9, result: 'oom-kill' })), { exitCode: 137, signal: 9 });
  assert.equal(exitEvent(end({ code: 1, status: 3, result: 'exit-code' })), { exitCode: 3, signal: 0 });
});

test.run();
