// Summarizes .cpuprofile files: total sampled CPU, and self time by function and by package.
// Usage: node --import tsx bench/profile-summary.ts FILE… [--top N] [--mean] (--mean: one summary, averaged per file)
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const topIndex = args.indexOf('--top');
const top = topIndex >= 0 ? Number(args.splice(topIndex, 2)[1]) : 25;
const meanIndex = args.indexOf('--mean');
const mean = meanIndex >= 0 && args.splice(meanIndex, 1).length > 0;

/** Which package (or part of ours) a frame's URL belongs to. */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (module) return module[1]!;
  if (url.startsWith('node:')) return 'node:internal';
  return url.replace(/^file:\/\//, '').split('/').slice(-1)[0]!;
}

interface Totals {
  busy: number;
  idle: number;
  wall: number;
  byFunction: Map<string, number>;
  byArea: Map<string, number>;
}

function add(map: Map<string, number>, key: string, us: number): void {
  map.set(key, (map.get(key) ?? 0) + us);
}

function summarizeFile(file: string, into: Totals): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i += 1) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  for (const [id, us] of self) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') {
      into.idle += us;
      continue;
    }
    into.busy += us;
    const where = area(frame.url, frame.functionName);
    add(into.byFunction, `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`, us);
    add(into.byArea, where, us);
  }
  into.wall += profile.endTime - profile.startTime;
}

function print(label: string, totals: Totals, divisor: number): void {
  const ms = (us: number) => `${(us / divisor / 1000).toFixed(1)} ms`;
  console.log(`\n${label}: ${ms(totals.busy)} busy, ${ms(totals.idle)} idle, wall ${ms(totals.wall)}`);
  const list = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).forEach(([key, us]) => console.log(`  ${ms(us).padStart(9)}  ${key}`));
  console.log(' by area:');
  list(totals.byArea, 12);
  console.log(' by function (self):');
  list(totals.byFunction, top);
}

const fresh = (): Totals => ({ busy: 0, idle: 0, wall: 0, byFunction: new Map(), byArea: new Map() });
if (mean) {
  const totals = fresh();
  for (const file of args) summarizeFile(file, totals);
  print(`mean of ${args.length} profiles`, totals, args.length);
} else {
  for (const file of args) {
    const totals = fresh();
    summarizeFile(file, totals);
    print(file, totals, 1);
  }
}
