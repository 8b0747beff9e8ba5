// Boots and stops the sandbox N times and prints boot-to-bus and stop figures (min / median / max).
// Usage: node --import tsx test/sandbox/measure.ts [N=10]
import { bootSandbox } from './index.ts';

const runs = Number(process.argv[2] ?? 10);
const boots: number[] = [];
const exits: number[] = [];
const stops: number[] = [];
for (let i = 0; i < runs; i += 1) {
  let exitMs: number | undefined;
  const sandbox = await bootSandbox({ name: 'opencode-pty-measure', onStop: (report) => (exitMs = report.exitMs) });
  boots.push(sandbox.bootMs);
  const start = performance.now();
  await sandbox.stop();
  stops.push(performance.now() - start);
  if (exitMs !== undefined) exits.push(exitMs);
}

function figures(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  return `${sorted[0]!.toFixed(0)} / ${median.toFixed(0)} / ${sorted[sorted.length - 1]!.toFixed(0)} ms`;
}

console.log(`n = ${runs}`);
console.log(`boot to working bus:             ${figures(boots)}`);
console.log(`stop: first step to PID 1 gone:  ${figures(exits)}`);
console.log(`stop(): whole, with host check:  ${figures(stops)}`);
