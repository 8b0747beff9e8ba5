// The broker's start, phase by phase, for its journal: what a cold start (socket activation) spends
// before it serves, so the part of a first connection's wait that is ours can be read from the
// journal of any run rather than guessed (docs/benchmarks.md "Cold start"). Times are ms since the
// process's time origin (Node sets it as the process starts: nodejs.org/api/perf_hooks.html
// "performance.timeOrigin"), so the first phase includes Node's own start and the bundle's load.
import { performance } from 'node:perf_hooks';

export class StartupPhases {
  #marks: [string, number][] = [];
  #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** The phase `name` ends now. */
  mark(name: string): void {
    this.#marks.push([name, this.#now()]);
  }

  /** "ready 92 ms after its start: node and bundle 61, config 2, bus 18, orphan scan 11". */
  line(): string {
    let last = 0;
    const parts = this.#marks.map(([name, at]) => {
      const part = `${name} ${Math.round(at - last)}`;
      last = at;
      return part;
    });
    return `ready ${Math.round(last)} ms after its start: ${parts.join(', ')}`;
  }
}
