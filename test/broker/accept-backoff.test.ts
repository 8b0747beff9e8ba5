// accept() out of fds: accepting pauses and resumes, logging once when it starts and once when it ends.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AcceptBackoff } from '../../src/broker/accept-backoff.ts';
import type { LogLevel } from '../../src/log.ts';

const emfile = Object.assign(new Error('accept4: too many open files'), { code: 'EMFILE' });

function setup() {
  const events: string[] = [];
  const lines: string[] = [];
  let resumed: () => void = () => undefined;
  const backoff = new AcceptBackoff(
    {
      pause: () => events.push('pause'),
      resume: () => {
        events.push('resume');
        resumed();
      },
    },
    (level: LogLevel, message: string) => lines.push(`${level}: ${message}`),
  );
  const nextResume = () => new Promise<void>((resolve) => (resumed = resolve));
  return { backoff, events, lines, nextResume };
}

test('a flood of EMFILE logs one line per episode and never spins', async () => {
  const { backoff, events, lines, nextResume } = setup();
  for (let i = 0; i < 5; i += 1) {
    const resumed = nextResume();
    assert.is(backoff.failed(emfile), true);
    assert.ok(backoff.paused);
    await resumed;
  }
  assert.equal(events, ['pause', 'resume', 'pause', 'resume', 'pause', 'resume', 'pause', 'resume', 'pause', 'resume']);
  assert.is(lines.length, 1);
  assert.match(lines[0]!, /^warning: accept: accept4: too many open files: out of resources; pausing accepts/);
  backoff.succeeded();
  backoff.succeeded();
  assert.is(lines.length, 2);
  assert.match(lines[1]!, /^notice: accept works again after 5 failed attempts \(EMFILE\)/);
  // A new episode logs again.
  backoff.failed(emfile);
  assert.is(lines.length, 3);
  backoff.close();
  assert.not.ok(backoff.paused);
});

test('an error about one connection skips it without pausing or logging', () => {
  const { backoff, events, lines } = setup();
  assert.is(backoff.failed(Object.assign(new Error('x'), { code: 'ECONNABORTED' })), false);
  assert.equal(events, []);
  assert.equal(lines, []);
});

test.run();
