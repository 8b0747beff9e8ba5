// "ROWS COLS" lines for `run --resize-fd`: split at every offset, each malformed form refused, bounded.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseSizeLine, RESIZE_LINE_MAX, ResizeLines } from '../../src/cli/resize-lines.ts';

test('a line as stty size prints it, with spaces, tabs or a CR around, is a size', () => {
  assert.equal(parseSizeLine('24 80'), { size: { rows: 24, cols: 80 } });
  assert.equal(parseSizeLine('  1\t65535 \r'), { size: { rows: 1, cols: 65535 } });
});

test('anything else is an error naming the line', () => {
  for (const bad of ['', '24', '24 80 1', '0 80', '24 0', '65536 80', '24x80', '-1 80', '24 80.5', 'a b', '024 080 x']) {
    const result = parseSizeLine(bad);
    assert.ok('error' in result, JSON.stringify(bad));
    assert.match((result as { error: string }).error, JSON.stringify(bad));
  }
});

test('lines split at every offset decode to the same sizes; a trailing partial line waits', () => {
  const input = Buffer.from('30 100\n40 120\r\nnope\n50 60');
  for (let at = 0; at <= input.length; at++) {
    const lines = new ResizeLines();
    const results = [...lines.push(input.subarray(0, at)), ...lines.push(input.subarray(at))];
    assert.equal(results.slice(0, 2), [{ size: { rows: 30, cols: 100 } }, { size: { rows: 40, cols: 120 } }], `split at ${at}`);
    assert.is(results.length, 3);
    assert.ok('error' in results[2]!);
    assert.equal(lines.push(Buffer.from('\n')), [{ size: { rows: 50, cols: 60 } }]);
  }
});

test('a line longer than the bound is one error, dropped to its newline, and the next line counts again', () => {
  const lines = new ResizeLines();
  assert.equal(lines.push(Buffer.from('9'.repeat(RESIZE_LINE_MAX))), []);
  // Past the bound nothing more is kept, however much comes.
  for (let i = 0; i < 100; i++) assert.equal(lines.push(Buffer.alloc(65536, 0x39)), []);
  const results = lines.push(Buffer.from('\n24 80\n'));
  assert.is(results.length, 2);
  assert.match((results[0] as { error: string }).error, `longer than ${RESIZE_LINE_MAX}`);
  assert.equal(results[1], { size: { rows: 24, cols: 80 } });
});

test.run();
