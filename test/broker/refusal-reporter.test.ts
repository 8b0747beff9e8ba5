// RefusalReporter: the first refusal of a peer is a line, the rest a count closed at flush.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RefusalReporter } from '../../src/broker/refusal-reporter.ts';
import type { LogLevel } from '../../src/log.ts';

test('one line when an episode opens, one with the count when it closes', () => {
  const lines: string[] = [];
  const reporter = new RefusalReporter((level: LogLevel, message: string) => lines.push(`${level}: ${message}`));
  for (let i = 0; i < 50; i += 1) reporter.note('/x.service', 'not inside agent.service', `pid ${i}`);
  assert.is(lines.length, 1);
  assert.match(lines[0]!, /^notice: refused "\/x.service": not inside agent.service \(pid 0\)/);
  reporter.flush();
  assert.is(lines.length, 2);
  assert.match(lines[1]!, /^notice: refused "\/x.service" 50 times over [0-9.]+ s: not inside agent.service$/);
  reporter.flush();
  assert.is(lines.length, 2, 'nothing more once closed');
});

test.run();
