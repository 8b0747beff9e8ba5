// Unit tests of the bench's summaries, rotation and ratios (the bench itself is no test: npm run bench).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatSections, quantile, rotation, summarize, withRatios, type Section } from '../../bench/stats.ts';

test('summaries: min, median of odd and even counts, nearest-rank p99, non-finite samples dropped', () => {
  assert.equal(summarize([3, 1, 2]), { n: 3, min: 1, median: 2, max: 3 });
  assert.equal(summarize([4, 1, 3, 2, Number.NaN]), { n: 4, min: 1, median: 2.5, max: 4 });
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.is(summarize(hundred, true).p99, 99);
  assert.is(quantile([5], 0.99), 5);
  assert.ok(Number.isNaN(summarize([]).median));
});

test('rotation: every contender leads once per cycle', () => {
  assert.equal(rotation(['a', 'b', 'c'], 0), ['a', 'b', 'c']);
  assert.equal(rotation(['a', 'b', 'c'], 1), ['b', 'c', 'a']);
  assert.equal(rotation(['a', 'b', 'c'], 5), ['c', 'a', 'b']);
  assert.equal(rotation([], 3), []);
});

test('ratios: against the anchor of the same row only; rows without one get none', () => {
  const section: Section = {
    title: 't',
    anchor: 'anchor',
    figures: [
      { row: 'r1', contender: 'us', unit: 'ms', summary: summarize([30]) },
      { row: 'r1', contender: 'anchor', unit: 'ms', summary: summarize([10]) },
      { row: 'r2', contender: 'us', unit: 'ms', summary: summarize([5]) },
    ],
  };
  const [us, anchor, alone] = withRatios(section).figures;
  assert.is(us!.ratio, 3);
  assert.is(anchor!.ratio, 1);
  assert.is(alone!.ratio, undefined);
  assert.match(formatSections([withRatios(section)]), '| r1 | us | 1 | 30.0 / 30.0 / 30.0 ms |  | 3.00× |  |');
});

test.run();
