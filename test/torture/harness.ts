// Torture harness, host side: the figures a class reports beyond the baseline every class returns to
// (support/supervisor.ts: broker fds, session units, supervisor processes).
import type { Sandbox } from '../sandbox/index.ts';
import { brokerPid } from '../support/supervisor.ts';

export async function brokerRss(sandbox: Sandbox): Promise<number> {
  const pid = await brokerPid(sandbox);
  if (!(pid > 0)) return 0;
  const status = (await sandbox.exec(['cat', `/proc/${pid}/status`])).stdout;
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
