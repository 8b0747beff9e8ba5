// The running agent's own groups decide (its /proc/PID/status), not the unit's SupplementaryGroups=.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentGroupWarning, checkAgentGroups, groupsOfStatus } from '../../src/operate/agent-groups.ts';

test('the Groups: line of /proc/PID/status', () => {
  assert.equal(groupsOfStatus('Name:\tnode\nGroups:\t990 4240 \nNgid:\t0\n'), [990, 4240]);
  assert.equal(groupsOfStatus('Groups:\t\n'), []);
  assert.is(groupsOfStatus('Name:\tx\n'), undefined);
});

test('a running agent without the group is told to restart; with it, or not running, nothing is said', () => {
  const warning = agentGroupWarning('opencode.service', 77, [990], 'opencode-pty', 4240);
  assert.match(warning!, 'opencode.service (MainPID 77) runs without the socket group opencode-pty');
  assert.match(warning!, 'systemctl restart opencode.service');
  assert.is(agentGroupWarning('opencode.service', 77, [990, 4240], 'opencode-pty', 4240), undefined);
  assert.is(agentGroupWarning('opencode.service', 0, undefined, 'opencode-pty', 4240), undefined);
});

test("read from the process systemd names: this test's own process has no such group", () => {
  const run = (file: string, args: string[]) => ({ code: 0, stdout: file === 'systemctl' && args.includes('--property=MainPID') ? `MainPID=${process.pid}\n` : '', stderr: '' });
  const warning = checkAgentGroups(run, 'agent.service', 'opencode-pty', 987654);
  assert.match(warning ?? '', `agent.service (MainPID ${process.pid}) runs without the socket group`);
  assert.is(checkAgentGroups(run, 'agent.service', 'opencode-pty', undefined), undefined, 'no such group: nothing to check');
});

test.run();
