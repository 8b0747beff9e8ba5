// node --import tsx bench/pool.ts FILE.json…: pools the samples of several bench runs per commit and
// prints, for every row, each contender's pooled median and its ratio against the anchor's pooled
// median, beside the median and range of the runs' own ratios. One run of 20 samples a contender
// moves a warm ratio by ±0.1 from run to run; runs alternated between two commits and pooled show
// differences of a few percent that single runs cannot.
import { readFileSync } from 'node:fs';
import { median } from './stats.ts';
import type { Section } from './stats.ts';

interface Run {
  meta: { commit: string };
  sections: Section[];
}

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('usage: node --import tsx bench/pool.ts FILE.json…\n');
  process.exit(2);
}

/** key (commit · section · row · contender) → pooled samples, and the runs' own ratios. */
const pooled = new Map<string, { samples: number[]; ratios: number[] }>();
const anchors = new Map<string, string>();
const order: string[] = [];
for (const file of files) {
  const run = JSON.parse(readFileSync(file, 'utf8')) as Run;
  for (const section of run.sections) {
    if (section.anchor) anchors.set(section.title, section.anchor);
    for (const figure of section.figures) {
      if (!figure.samples) continue;
      const key = [run.meta.commit, section.title, figure.row, figure.contender].join('\u0000');
      if (!pooled.has(key)) {
        pooled.set(key, { samples: [], ratios: [] });
        order.push(key);
      }
      const entry = pooled.get(key)!;
      entry.samples.push(...figure.samples);
      if (figure.ratio !== undefined) entry.ratios.push(figure.ratio);
    }
  }
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const lines = ['| commit | section | row | who | n | pooled median | pooled ratio | runs\' ratios: median (min–max) |', '|---|---|---|---|---|---|---|---|'];
for (const key of order) {
  const [commit, title, row, contender] = key.split('\u0000') as [string, string, string, string];
  const { samples, ratios } = pooled.get(key)!;
  const anchor = anchors.get(title);
  const anchorSamples = anchor ? pooled.get([commit, title, row, anchor].join('\u0000'))?.samples : undefined;
  const mid = median(sorted(samples));
  const ratio = anchorSamples?.length ? mid / median(sorted(anchorSamples)) : undefined;
  const runs = ratios.length ? `${median(sorted(ratios)).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})` : '';
  lines.push(`| ${commit} | ${title.slice(0, 24)} | ${row} | ${contender} | ${samples.length} | ${mid.toFixed(2)} | ${ratio === undefined ? '' : `${ratio.toFixed(2)}×`} | ${runs} |`);
}
process.stdout.write(`${lines.join('\n')}\n`);
