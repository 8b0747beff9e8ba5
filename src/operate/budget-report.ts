// What per-START budgets this host enforces (verify's report, pure): a session's memory, tasks and CPU budgets
// hold only where their controllers are in the unified hierarchy, which systemd 252 drives on a unified host
// alone (cgroups.ts controllerHome); elsewhere the supervisor refuses them (NOT_ENFORCED) rather than let
// systemd accept and ignore them. The wall clock is systemd's own timer; the network modes are confirmed per
// session (src/worker/guarantees.ts).
import type { BudgetLimits } from '../config/index.ts';
import { cgroupLayout, type CgroupFacts } from './cgroups.ts';

/** Each cgroup budget and the unified controller that enforces it. */
const BUDGET_CONTROLLERS: [budget: keyof BudgetLimits, controller: string, option: string][] = [
  ['memoryBytes', 'memory', '--max-memory'],
  ['tasks', 'pids', '--max-tasks'],
  ['cpuPercent', 'cpu', '--max-cpu'],
];

export interface BudgetReport {
  note: string;
  /** A default budget this host cannot enforce: every START would be refused. */
  warning?: string;
}

export function budgetReport(facts: CgroupFacts, budgets: BudgetLimits | undefined): BudgetReport {
  const unified = cgroupLayout(facts) === 'unified';
  const held = BUDGET_CONTROLLERS.filter(([, controller]) => unified && facts.controllers.includes(controller));
  const refused = BUDGET_CONTROLLERS.filter((entry) => !held.includes(entry));
  const names = (list: typeof BUDGET_CONTROLLERS) => list.map(([, , option]) => option).join(', ');
  const note =
    refused.length === 0
      ? 'per-session budgets: this host enforces --max-memory, --max-tasks, --max-cpu (unified cgroup hierarchy), --max-time (systemd\'s timer)'
      : `per-session budgets: ${names(refused)} are refused here (NOT_ENFORCED): their controllers (${refused.map(([, c]) => c).join(', ')}) are not in the unified cgroup hierarchy${unified ? '' : ' (a hybrid host: systemd drives them through cgroup v1, where it accepts them and enforces none)'}; ${held.length ? `${names(held)} and ` : ''}--max-time hold; network modes are confirmed on each started session`;
  const unheld = refused.filter(([budget]) => budgets?.[budget].default != null).map(([budget]) => `session.budgets.${budget}.default`);
  return unheld.length === 0 ? { note } : { note, warning: `${unheld.join(', ')} set, which this host cannot enforce: every START will be refused (NOT_ENFORCED)` };
}
