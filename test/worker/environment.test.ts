import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sessionEnvironment } from '../../src/worker/environment.ts';

test('only allowlisted names pass, TERM comes from the config', () => {
  const env = sessionEnvironment(
    [
      { name: 'LANG', value: 'C.UTF-8' },
      { name: 'LD_PRELOAD', value: '/tmp/x.so' },
      { name: 'PATH', value: '/evil' },
    ],
    ['LANG'],
    'xterm-256color',
  );
  assert.equal(env, { LANG: 'C.UTF-8', TERM: 'xterm-256color' });
});

test('a plain TERM from the client wins, a strange one does not', () => {
  assert.is(sessionEnvironment([{ name: 'TERM', value: 'screen-256color' }], [], 'xterm').TERM, 'screen-256color');
  assert.is(sessionEnvironment([{ name: 'TERM', value: '../../x y' }], [], 'xterm').TERM, 'xterm');
});

test.run();
