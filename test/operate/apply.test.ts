// Applying a plan: the step that failed is named, the failure itself is kept as the cause.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApplyError, applyPlan } from '../../src/operate/apply.ts';
import type { Plan } from '../../src/operate/install-plan.ts';

test('a failing step stops the plan with an ApplyError naming it, its cause kept; unchanged steps are skipped', () => {
  const ran: string[][] = [];
  const said: string[] = [];
  const plan: Plan = {
    refusals: [],
    notes: [],
    steps: [
      { step: { op: 'systemctl', args: ['daemon-reload'] }, change: false },
      { step: { op: 'systemctl', args: ['enable', 'x.socket'] }, change: true },
      { step: { op: 'systemctl', args: ['start', 'x.socket'] }, change: true },
      { step: { op: 'systemctl', args: ['never'] }, change: true },
    ],
  };
  const run = (file: string, args: string[]) => {
    ran.push([file, ...args]);
    return args[0] === 'start' ? { code: 1, stdout: '', stderr: 'Job failed.' } : { code: 0, stdout: '', stderr: '' };
  };
  try {
    applyPlan(plan, run, (line) => said.push(line));
    assert.unreachable('applied');
  } catch (error) {
    assert.instance(error, ApplyError);
    assert.equal((error as ApplyError).step, { op: 'systemctl', args: ['start', 'x.socket'] });
    assert.instance((error as Error).cause, Error);
    assert.match((error as Error).message, ((error as Error).cause as Error).message);
  }
  assert.equal(ran, [['systemctl', 'enable', 'x.socket'], ['systemctl', 'start', 'x.socket']]);
  assert.is(said.length, 1);
});

test.run();
