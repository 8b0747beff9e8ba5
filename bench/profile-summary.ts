// Summarizes .cpuprofile files: total sampled CPU, and self time by function and by package.
// Usage: node --import tsx bench/profile-summary.ts FILE… [--top N]
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

/** Which package (or part of ours) a frame's URL belongs to. */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (module) return module[1]!;
  if (url.startsWith('node:')) return 'node:internal';
  return url.replace(/^file:\/\//, '').split('/').slice(-1)[0]!;
}

for (const file of args) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i += 1) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const where = area(frame.url, frame.functionName);
    const key = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byArea.set(where, (byArea.get(where) ?? 0) + us);
  }
  const ms = (us: number) => `${(us / 1000).toFixed(1)} ms`;
  console.log(`\n${file}: ${ms(total)} busy, ${ms(idle)} idle, wall ${ms(profile.endTime - profile.startTime)}`);
  const list = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).forEach(([key, us]) => console.log(`  ${ms(us).padStart(9)}  ${key}`));
  console.log(' by area:');
  list(byArea, 12);
  console.log(' by function (self):');
  list(byFunction, top);
}
