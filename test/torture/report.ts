// What one torture class found, and the table `npm run torture` ends with.
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import type { Agent } from '../support/agent.ts';

export type Scale = 'fast' | 'full';

export interface TortureContext {
  sandbox: Sandbox;
  driver: Agent;
  scale: Scale;
  /** Prints progress of long runs. */
  note(message: string): void;
}

export interface FloodFigures {
  starts: number;
  failures: number;
  p50Ms: number;
  p99Ms: number;
  /** Each successful start's time (connect→STARTED), for percentiles over several rounds. */
  samplesMs: number[];
  /** Broker CPU time over the flood, as a share of one core. */
  brokerCpu: number;
  /** Why the failed starts failed, each cause with its count ("ADMISSION: …×3"), so a failing case says why. */
  causes: string[];
}

export interface ClassResult {
  name: string;
  cases: number;
  rejectedAsExpected: number;
  /** Cases whose answer was not the documented one: a description each. */
  unexpected: string[];
  brokerCrashes: number;
  brokerRestarts: number;
  leaked: { fds: number; units: number; processes: number };
  peakRssMb: number;
  flood?: FloodFigures;
  /** Anything the class wants said beside its figures. */
  notes: string[];
}

/** Broker starts and failures seen in its journal so far (systemd's own lines about the unit included). */
export async function brokerLife(sandbox: Sandbox): Promise<{ starts: number; crashes: number }> {
  const journal = await sandbox.journal(BROKER_UNIT);
  const lines = journal.split('\n');
  return {
    starts: lines.filter((line) => line.includes('serving the socket systemd passed')).length,
    crashes: lines.filter((line) => /Main process exited, code=(killed|dumped)|Main process exited, code=exited, status=[1-9]|Failed with result/.test(line)).length,
  };
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

export function table(results: ClassResult[]): string {
  const header = ['class', 'cases', 'rejected ok', 'unexpected', 'crashes', 'restarts', 'fds', 'units', 'procs', 'peak RSS MB', 'agent p50/p99 ms', 'agent failures'];
  const rows = results.map((r) => [
    r.name,
    String(r.cases),
    String(r.rejectedAsExpected),
    String(r.unexpected.length),
    String(r.brokerCrashes),
    String(r.brokerRestarts),
    String(r.leaked.fds),
    String(r.leaked.units),
    String(r.leaked.processes),
    r.peakRssMb.toFixed(1),
    r.flood ? `${r.flood.p50Ms.toFixed(0)}/${r.flood.p99Ms.toFixed(0)}` : '-',
    r.flood ? `${r.flood.failures}/${r.flood.starts}` : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, i) => pad(cell, widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}
