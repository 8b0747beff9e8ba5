// `npm run torture [-- --fast] [--name=SANDBOX] [class…]`: the torture classes against the real supervisor in one
// sandbox, ending with the table of figures. Exits 1 if any class found an unexpected answer, a
// crash (outside the faults class, which kills on purpose) or a leak.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bootSandbox } from '../sandbox/index.ts';
import { Agent, buildAgent } from '../support/agent.ts';
import { deploySupervisor } from '../support/supervisor.ts';
import { table, type ClassResult } from './report.ts';
import { CLASSES, TORTURE_CONFIG, Torture, type ClassName } from './suite.ts';

const args = process.argv.slice(2);
const scale = args.includes('--fast') ? 'fast' : 'full';
const wanted = args.filter((arg) => !arg.startsWith('--')) as ClassName[];
const classes = wanted.length ? wanted : [...CLASSES];
for (const name of classes) if (!CLASSES.includes(name)) throw new Error(`unknown class ${name}; classes: ${CLASSES.join(', ')}`);

const note = (message: string) => process.stderr.write(`${new Date().toISOString()} ${message}\n`);
// The bundles the sandbox installs, as `npm test` builds them.
const built = spawnSync(process.execPath, [fileURLToPath(new URL('../../build.mjs', import.meta.url))], { stdio: 'inherit' });
if (built.status !== 0) throw new Error('node build.mjs failed');
await buildAgent();
// Another name lets a second run share the machine with one under way.
const sandbox = await bootSandbox({ name: args.find((arg) => arg.startsWith('--name='))?.slice(7) || 'torture' });
const results: ClassResult[] = [];
let failed = false;
try {
  await deploySupervisor(sandbox, TORTURE_CONFIG);
  const torture = new Torture(sandbox, await Agent.start(sandbox), scale, note);
  for (const name of classes) {
    const started = Date.now();
    note(`${name}: running (${scale})`);
    // A class that throws is a finding too: recorded, and the table still printed.
    const result = await torture.run(name).catch((error: Error): ClassResult => ({
      name,
      cases: 0,
      rejectedAsExpected: 0,
      unexpected: [`the class stopped: ${error.stack ?? error.message}`],
      brokerCrashes: 0,
      brokerRestarts: 0,
      leaked: { fds: 0, units: 0, processes: 0 },
      peakRssMb: 0,
      notes: [],
    }));
    results.push(result);
    note(`${name}: ${result.cases} cases in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const leaked = result.leaked.fds + result.leaked.units + result.leaked.processes;
    if (result.unexpected.length || leaked || (name !== 'faults' && result.brokerCrashes)) failed = true;
  }
} finally {
  await sandbox.stop();
}
console.log(`\n${table(results)}\n`);
for (const result of results) {
  for (const line of result.notes) console.log(`${result.name}: ${line}`);
  for (const line of result.unexpected.slice(0, 20)) console.log(`${result.name}: UNEXPECTED ${line}`);
  if (result.unexpected.length > 20) console.log(`${result.name}: … ${result.unexpected.length - 20} more`);
}
process.exit(failed ? 1 : 0);
