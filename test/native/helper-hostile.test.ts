// Hostile data-phase input against the real session helper: the same table as the codec's, the same
// ERROR codes; a descriptor on data; random bytes. The helper never crashes, never writes a torn
// frame, and hangs the program up.
import { openSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { bytes } from '../protocol/fixtures.ts';
import { HOSTILE_DATA_PHASE } from '../protocol/hostile-frames.ts';
import { HelperRun, input, sh } from './helper-harness.ts';

async function refused(stream: Buffer, fds: number[] = []) {
  const run = new HelperRun(sh('echo ready; exec sleep 100'));
  await run.waitFor('ready\r\n');
  run.send(stream, fds);
  return run.ended;
}

for (const hostile of HOSTILE_DATA_PHASE) {
  test(`helper: ${hostile.name} ends the session with ERROR code ${hostile.wire}`, async () => {
    const ended = await refused(bytes(hostile.hex));
    assert.is(ended.report?.reason, 'protocol');
    assert.is(ended.report?.code, hostile.wire, ended.report?.text);
    assert.ok(ended.report!.text.length > 0);
    assert.is(ended.signal, 'SIGHUP', 'the program is hung up');
  });
}

test('helper: a header split across reads is judged when complete', async () => {
  const run = new HelperRun(sh('echo ready; exec sleep 100'));
  await run.waitFor('ready\r\n');
  for (const byte of bytes('ff ffffffff')) run.send(Buffer.from([byte]));
  const ended = await run.ended;
  assert.is(ended.report?.code, 1);
});

test('helper: a descriptor riding on INPUT is closed and a PROTOCOL error', async () => {
  const fd = openSync('/dev/null', 'r');
  // The socket owns the fd once written (and closes its copy once sent).
  const ended = await refused(input('x'), [fd]);
  assert.is(ended.report?.reason, 'protocol');
  assert.is(ended.report?.code, 1);
  assert.match(ended.report!.text, 'descriptor');
});

test('helper: random bytes end in a protocol report or nothing, never a crash or a torn frame', async () => {
  const header = fc.tuple(fc.integer({ min: 0, max: 0x0f }), fc.integer({ min: 0, max: 12 })).map(([type, length]) => Buffer.from([type, 0, 0, 0, length]));
  const piece = fc.oneof(fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)), header);
  await fc.assert(
    fc.asyncProperty(fc.array(piece, { minLength: 1, maxLength: 8 }), async (pieces) => {
      const run = new HelperRun(sh('echo ready; exec sleep 100'));
      await run.waitFor('ready\r\n');
      run.send(Buffer.concat(pieces));
      // Whatever was valid, the session is then asked to end: a stream the helper took as valid ends here.
      run.child.kill('SIGHUP');
      const ended = await run.ended;
      assert.ok(ended.report, 'a report always comes');
      assert.ok(['protocol', 'exit', 'stop'].includes(ended.report!.reason), ended.report!.reason);
      if (ended.report!.reason === 'protocol') assert.ok([1, 9].includes(ended.report!.code));
    }),
    { numRuns: 30 },
  );
});

test.run();
