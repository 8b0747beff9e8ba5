// examples/opencode.service: a complete agent unit as the README and install's note point to it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const text = readFileSync(fileURLToPath(new URL('../../examples/opencode.service', import.meta.url)), 'utf8');
const settings = text.split('\n').filter((line) => line && !line.startsWith('#'));

test('a service with an account, a program, a restart policy and an [Install] section', () => {
  for (const wanted of ['[Unit]', '[Service]', '[Install]', 'User=opencode', 'Group=opencode', 'WantedBy=multi-user.target']) {
    assert.ok(settings.includes(wanted), wanted);
  }
  assert.ok(settings.some((line) => /^ExecStart=\/\S+ serve\b/.test(line)), 'an opencode server');
});

test('it gets the socket group from install\'s drop-in only, never from its own text', () => {
  assert.not.ok(settings.some((line) => line.startsWith('SupplementaryGroups=')));
  assert.match(text, 'opencode-ptyctl install --client-user opencode --client-unit opencode.service');
});

test.run();
