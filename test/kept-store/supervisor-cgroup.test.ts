// The cgroup a kept session's rendezvous names (src/kept-store/supervisor-cgroup.ts): the broker's unit's only.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { supervisorCgroup } from '../../src/kept-store/supervisor-cgroup.ts';

const UNIT = 'opencode-pty-supervisor@broker.service';
const path = '/system.slice/system-opencode\\x2dpty\\x2dsupervisor.slice/opencode-pty-supervisor@broker.service';

test("the broker's unit's cgroup, from the cgroup v2 line", () => {
  assert.equal(supervisorCgroup(`0::${path}\n`, UNIT), { cgroup: path });
  assert.equal(supervisorCgroup(`1:name=systemd:/x\n0::${path}\n`, UNIT), { cgroup: path });
});

test('anything else is refused, saying why', () => {
  assert.ok('why' in supervisorCgroup('1:name=systemd:/x\n', UNIT), 'no v2 line');
  assert.ok('why' in supervisorCgroup('0::/user.slice/session-1.scope\n', UNIT), 'another unit');
  assert.ok('why' in supervisorCgroup(`0::/a/../${UNIT}\n`, UNIT), 'a ".." component');
  assert.ok('why' in supervisorCgroup(`0::/${'x'.repeat(1100)}/${UNIT}\n`, UNIT), 'too long for the helper');
  assert.ok('why' in supervisorCgroup(`0::${UNIT}\n`, UNIT), 'not absolute');
});

test.run();
