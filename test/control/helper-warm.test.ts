// Dialect 5's messages as the worker writes them (bytes built by hand) and their bounds.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HELPER_DIALECT, HelperChannelError, HelperLimits, WARM_CLAIMED, WARM_HELLO, encodeClaim, encodeLaunch } from '../../src/control/helper-channel.ts';

test('CLAIM is empty; what a warm helper answers is HELLO of this dialect, then an empty CLAIMED', () => {
  assert.equal([...encodeClaim()], [0x08, 0, 0, 0, 0]);
  assert.equal([...WARM_HELLO], [0x40, 0, 0, 0, 2, 0, HELPER_DIALECT]);
  assert.equal([...WARM_CLAIMED], [0x49, 0, 0, 0, 0]);
});

test('LAUNCH: each argument and a NUL, the length in the header', () => {
  assert.equal([...encodeLaunch(['24', 'a b'])], [0x09, 0, 0, 0, 7, 0x32, 0x34, 0, 0x61, 0x20, 0x62, 0]);
  // An empty argument is an argument (argv may hold "").
  assert.equal([...encodeLaunch([''])], [0x09, 0, 0, 0, 1, 0]);
});

test('LAUNCH refuses what the helper would: no arguments, too many, a NUL in one, too many bytes', () => {
  const refused = (args: string[]) => assert.throws(() => encodeLaunch(args), (error: unknown) => error instanceof HelperChannelError);
  refused([]);
  refused(Array.from({ length: HelperLimits.MAX_LAUNCH_ARGS + 1 }, () => 'x'));
  refused(['a\0b']);
  refused(['x'.repeat(HelperLimits.MAX_LAUNCH_PAYLOAD)]);
  assert.is(encodeLaunch(['x'.repeat(HelperLimits.MAX_LAUNCH_PAYLOAD - 1)]).length, 5 + HelperLimits.MAX_LAUNCH_PAYLOAD);
});

test.run();
