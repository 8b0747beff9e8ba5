// What verify says about Landlock: a note where the workspace profile can hold, a warning where the
// configured workspace profile would refuse every START.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { landlockReport } from '../../src/operate/landlock.ts';

test('ABI 6 or later: a note, whatever the profile', () => {
  assert.equal(landlockReport('workspace', '7\n'), { note: 'Landlock is ABI 7: the workspace profile can be enforced here' });
  assert.equal(landlockReport('default', '6\n'), { note: 'Landlock is ABI 6: the workspace profile can be enforced here' });
});

test('an older ABI, no Landlock, or no answer: a warning under the workspace profile, a note otherwise', () => {
  assert.match(landlockReport('workspace', '5\n').warning!, 'needs Landlock ABI 6; here Landlock is ABI 5: every START is refused (START_FAILED), none runs unconfined');
  assert.match(landlockReport('workspace', '-95\n').warning!, 'is not available (errno 95');
  assert.match(landlockReport('workspace', undefined).warning!, 'cannot be told');
  assert.match(landlockReport('workspace', 'garbage').warning!, 'cannot be told');
  assert.equal(Object.keys(landlockReport('hardened', '-38')), ['note']);
});

test.run();
