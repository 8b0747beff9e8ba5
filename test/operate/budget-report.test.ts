// verify's word on per-session budgets: which this host enforces, by layout and controller, and a warning
// when the config's default budget is one it cannot (every START would be refused).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_SANDBOX } from '../../src/config/sandbox.ts';
import { budgetReport } from '../../src/operate/budget-report.ts';
import type { CgroupFacts } from '../../src/operate/cgroups.ts';

const unified: CgroupFacts = { root: 'cgroup2', hybridUnified: false, controllers: ['cpu', 'memory', 'pids'], v1Controllers: [] };
// These machines: memory and pids on cgroup v1, cgroup2 at /sys/fs/cgroup/unified beside them.
const hybrid: CgroupFacts = { root: 'tmpfs', hybridUnified: true, controllers: ['hugetlb', 'pids'], v1Controllers: ['memory', 'pids'] };

test('a unified host with memory, pids and cpu enforces every budget', () => {
  const report = budgetReport(unified, DEFAULT_SANDBOX.budgets);
  assert.match(report.note, 'this host enforces --max-memory, --max-tasks, --max-cpu');
  assert.is(report.warning, undefined);
});

test('a hybrid host refuses the cgroup budgets (systemd drives them through v1 there, whatever the unified root offers)', () => {
  const report = budgetReport(hybrid, DEFAULT_SANDBOX.budgets);
  assert.match(report.note, '--max-memory, --max-tasks, --max-cpu are refused here (NOT_ENFORCED)');
  assert.match(report.note, 'a hybrid host');
  assert.is(report.warning, undefined);
});

test('a unified host without the cpu controller refuses only --max-cpu; a default budget it cannot hold is a warning', () => {
  const noCpu = { ...unified, controllers: ['memory', 'pids'] };
  const budgets = { ...DEFAULT_SANDBOX.budgets, cpuPercent: { max: 100, default: 100 } };
  const report = budgetReport(noCpu, budgets);
  assert.match(report.note, '--max-cpu are refused here');
  assert.match(report.note, '--max-memory, --max-tasks and --max-time hold');
  assert.match(report.warning!, 'session.budgets.cpuPercent.default set, which this host cannot enforce');
});

test.run();
