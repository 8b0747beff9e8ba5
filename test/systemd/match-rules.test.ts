// Unit tests of the per-unit match rules.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { unitMatchRules } from '../../src/systemd/match-rules.ts';

test('three rules, each naming systemd and this unit only', () => {
  const name = 'opencode-pty-session-0a1b.service';
  assert.equal(unitMatchRules(name), [
    "type='signal',sender='org.freedesktop.systemd1',path='/org/freedesktop/systemd1/unit/opencode_2dpty_2dsession_2d0a1b_2eservice',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'",
    "type='signal',sender='org.freedesktop.systemd1',path='/org/freedesktop/systemd1',interface='org.freedesktop.systemd1.Manager',member='JobRemoved',arg2='opencode-pty-session-0a1b.service'",
    "type='signal',sender='org.freedesktop.systemd1',path='/org/freedesktop/systemd1',interface='org.freedesktop.systemd1.Manager',member='UnitRemoved',arg0='opencode-pty-session-0a1b.service'",
  ]);
});

test('a name that could end a quoted value is refused', () => {
  assert.throws(() => unitMatchRules("x',path_namespace='/.service"), /not a plain service name/);
  assert.throws(() => unitMatchRules('x.socket'), /not a plain service name/);
});

test.run();
