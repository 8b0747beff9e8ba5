// The fast subset of `npm run torture`: every class at a small scale against the real supervisor.
// Each class must answer every case as documented, never crash the broker, and return the broker's
// fds, the session units and the supervisor's processes to their baseline.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { Agent } from '../support/agent.ts';
import { deploySupervisor } from '../support/supervisor.ts';
import { table, type ClassResult } from './report.ts';
import { TORTURE_CONFIG, Torture, type ClassName } from './suite.ts';

let sandbox: Sandbox;
let torture: Torture;
const results: ClassResult[] = [];

test.before(async () => {
  sandbox = await bootSandbox({ name: 'torture-fast' });
  await deploySupervisor(sandbox, TORTURE_CONFIG);
  torture = new Torture(sandbox, await Agent.start(sandbox), 'fast', (message) => console.log(`# ${message}`));
});

test.after(async () => {
  if (results.length) console.log(`\n${table(results)}\n${results.flatMap((r) => r.notes.map((n) => `${r.name}: ${n}`)).join('\n')}`);
  await sandbox?.stop();
});

/** Classes whose expected broker restarts are part of the case (the faults kill it on purpose). */
const RESTARTS_EXPECTED = new Set<ClassName>(['faults', 'supervisor-restarts']);

for (const name of ['bad-frames', 'bad-fds', 'bad-peers', 'faults', 'soak', 'agent-restarts', 'supervisor-restarts'] as const) {
  test(`${name}: documented answers, no crash, back to baseline`, async () => {
    const result = await torture.run(name);
    results.push(result);
    assert.equal(result.unexpected, [], result.unexpected.join('\n'));
    assert.ok(result.cases > 0);
    if (!RESTARTS_EXPECTED.has(name)) {
      assert.is(result.brokerCrashes, 0, 'broker crashes');
      assert.is(result.brokerRestarts, 0, 'broker restarts');
    }
    assert.equal(result.leaked, { fds: 0, units: 0, processes: 0 });
  });
}

test.run();
