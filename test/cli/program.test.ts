// The command's dispatch (src/cli/program.ts): the operator commands it loads on demand are the ones
// src/cli/operate.ts has, by one list.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATOR_NAMES, warmUpForCodeCache } from '../../src/cli/program.ts';
import { OPERATOR_COMMANDS } from '../../src/cli/operate.ts';

test('the operator names the dispatch knows are exactly the operator commands', () => {
  assert.equal([...OPERATOR_NAMES].sort(), Object.keys(OPERATOR_COMMANDS).sort());
});

test("the build's warm-up (run before the code cache is written) runs through", () => {
  assert.is(warmUpForCodeCache(), undefined);
});

test.run();
