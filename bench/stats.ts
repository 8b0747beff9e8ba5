// The bench's figures: summaries of samples, ratios against a row's anchor, and the printed table (pure).

export interface Summary {
  n: number;
  min: number;
  median: number;
  max: number;
  p99?: number;
}

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  // Nearest rank: the smallest sample with at least q of the samples at or below it.
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1]!;
}

export function median(sorted: number[]): number {
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function summarize(values: number[], withP99 = false): Summary {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  const summary: Summary = { n: sorted.length, min: sorted[0] ?? Number.NaN, median: median(sorted), max: sorted.at(-1) ?? Number.NaN };
  if (withP99) summary.p99 = quantile(sorted, 0.99);
  return summary;
}

/** The order of contenders in round `round`: rotated by one each round, so none always goes first. */
export function rotation<T>(items: readonly T[], round: number): T[] {
  const shift = items.length ? round % items.length : 0;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

export interface Figure {
  /** What is measured, e.g. "warm connect→EXIT". */
  row: string;
  /** Who: "opencode-pty library", "systemd-run --pty", … */
  contender: string;
  unit: string;
  summary: Summary;
  /** median / the anchor's median in the same row. */
  ratio?: number;
  /** Every sample, for the JSON only: runs pooled (bench/pool.ts) resolve what one run's spread hides. */
  samples?: number[];
  note?: string;
}

export interface Section {
  title: string;
  /** The contender every ratio in this section is taken against (its name as in the figures), or a fixed goal. */
  anchor?: string;
  figures: Figure[];
}

/** Fills in each figure's ratio against the anchor figure of the same row in the section. */
export function withRatios(section: Section): Section {
  const figures = section.figures.map((figure) => {
    const anchor = section.figures.find((other) => other.row === figure.row && other.contender === section.anchor);
    const ratio = anchor && anchor.summary.median > 0 ? figure.summary.median / anchor.summary.median : undefined;
    return ratio === undefined ? figure : { ...figure, ratio };
  });
  return { ...section, figures };
}

function number(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '–';
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** The sections as Markdown tables: one line per figure, min / median / max (p99) and the ratio. */
export function formatSections(sections: Section[]): string {
  const lines: string[] = [];
  for (const section of sections) {
    lines.push(`### ${section.title}${section.anchor ? ` (ratios against ${section.anchor})` : ''}`, '');
    lines.push('| what | who | n | min / median / max | p99 | ratio | note |', '|---|---|---|---|---|---|---|');
    for (const figure of section.figures) {
      const { n, min, median: mid, max, p99 } = figure.summary;
      lines.push(
        `| ${figure.row} | ${figure.contender} | ${n} | ${number(min)} / ${number(mid)} / ${number(max)} ${figure.unit} | ${p99 === undefined ? '' : number(p99)} | ${figure.ratio === undefined ? '' : `${figure.ratio.toFixed(2)}×`} | ${figure.note ?? ''} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}
