// Unit tests of the sandbox's seed: unit masks, the boot target, the account files.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { accountFiles, CLIENT, KEPT_UNITS, OTHER, targetUnit, unitsToMask } from './seed.ts';

test('masks every unit but the kept ones, and never directories of drop-ins or wants', () => {
  const found = ['dbus.service', 'getty@.service', 'tmp.mount', 'sysinit.target', 'sysinit.target.wants', 'user@.service.d', 'README', 'getty@.service'];
  assert.equal(unitsToMask(found), ['getty@.service', 'tmp.mount']);
});

test('keeps what booting and stopping need', () => {
  for (const unit of ['sysinit.target', 'basic.target', 'dbus.socket', 'dbus.service', 'systemd-journald.service', 'exit.target', 'systemd-exit.service']) {
    assert.ok(KEPT_UNITS.has(unit), unit);
  }
  assert.not.ok(KEPT_UNITS.has('systemd-tmpfiles-setup.service'), 'tmpfiles must stay masked');
});

test('the boot target pulls in the bus and the journal', () => {
  const text = targetUnit();
  assert.match(text, /^Requires=basic\.target$/m);
  assert.match(text, /^Wants=.*\bdbus\.socket\b.*\bdbus\.service\b.*\bsystemd-journald\.service\b/m);
});

test('account files append the test accounts and replace entries of the same name', () => {
  const host = {
    passwd: 'root:x:0:0:root:/root:/bin/bash\nocpty-client:x:1:1::/nowhere:/bin/false\n',
    group: 'root:x:0:\n',
    shadow: 'root:*:19000:0:99999:7:::\n',
    gshadow: 'root:*::\n',
  };
  const files = accountFiles(host, [CLIENT, OTHER]);
  assert.is(
    files.passwd,
    'root:x:0:0:root:/root:/bin/bash\nocpty-client:x:4242:4242::/home/ocpty-client:/bin/bash\nocpty-other:x:4243:4243::/home/ocpty-other:/bin/bash\n',
  );
  assert.is(files.group, 'root:x:0:\nocpty-client:x:4242:\nocpty-other:x:4243:\nopencode-pty:x:4240:\n');
  assert.match(files.shadow, /^ocpty-client:!:/m);
  assert.match(files.gshadow, /^opencode-pty:!::$/m);
});

test.run();
