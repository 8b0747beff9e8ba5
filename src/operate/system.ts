// The host side of the operator commands: systemctl, journalctl and account tools run as child
// processes (what an operator would type), with their output and status, never through a shell.
import { spawnSync } from 'node:child_process';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export type Runner = (file: string, args: string[]) => Ran;

export const runCommand: Runner = (file, args) => {
  const result = spawnSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  if (result.error) return { code: 127, stdout: '', stderr: `${file}: ${result.error.message}` };
  return { code: result.status ?? 128, stdout: result.stdout, stderr: result.stderr };
};

/** `systemctl show` of some properties, parsed (values as text; "[not set]" and empty stay text). */
export function showUnit(run: Runner, unit: string, properties: string[]): Record<string, string> {
  const result = run('systemctl', ['show', unit, ...properties.map((p) => `--property=${p}`)]);
  const values: Record<string, string> = {};
  for (const line of result.stdout.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) values[line.slice(0, at)] = line.slice(at + 1);
  }
  return values;
}

/** Loaded units matching a glob (`systemctl list-units --all`), names only. */
export function listUnits(run: Runner, pattern: string): string[] {
  const result = run('systemctl', ['list-units', '--all', '--plain', '--no-legend', '--full', pattern]);
  return result.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name.endsWith('.service'));
}

/** systemd's "unavailable" for 64-bit figures (UINT64_MAX), and unset: both are unavailable, never zero. */
export function figure(text: string | undefined): bigint | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  const value = BigInt(text);
  return value === 2n ** 64n - 1n ? undefined : value;
}
