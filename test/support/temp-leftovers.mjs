// The host's temp dir after a test run: what a suite left there. Pure (names in, findings out), so
// its rule is unit-tested; test/run.mjs takes the listings (before the run, before and after each
// suite, after the run) and fails the run on what this calls a leftover.
//
// The machine may be shared: other programs, and other test runs of this same tree, create and
// delete names in the temp dir while ours runs. A name is a leftover only when all three hold:
//   1. it is there at the end of the run and was not at its start;
//   2. it appeared while one of our suites ran (in that suite's after-listing, not its before) and
//      was still there when the suite ended, so the suite is named with it;
//   3. it looks like ours: it starts with a prefix this repository's sources give to a temp name
//      (ourPrefixes reads them from `tmpdir(), '<prefix>'` in the sources, plus `opencode-pty-`).
// A name that meets 1 and 2 but not 3 is reported as a note (another program's), not failed.
// A sandbox's temp dir and canary name the process that owns them (opencode-pty-sandbox-<pid>-…,
// opencode-pty-canary-<pid>-…): one owned by no suite of this run is another run's (those live as
// long as an integration suite, so they are the likeliest to span ours), and only noted.
// What names cannot tell apart: another run of this tree (its suites make the same names) creating
// one during one of our suites and keeping it past our run's end; seen here with four runs at once
// (a client suite's server dir, a worker suite's report dir, seconds old). So when another runner
// (a process running test/run.mjs) was alive at our start or end, leftovers are reported, not failed.
import { readdirSync, readFileSync, statSync } from 'node:fs';

/** Other processes running this runner (another test run on this host), by PID. */
export function otherRunners(self = process.pid) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === self) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.some((arg) => arg.endsWith('test/run.mjs'))) found.push(Number(entry));
    } catch {} // gone meanwhile
  }
  return found;
}
import { join } from 'node:path';

/** Every prefix this tree's sources give to a name in the temp dir. */
export function ourPrefixes(root, dirs = ['test', 'bench', 'src', 'scripts']) {
  const prefixes = new Set(['opencode-pty-']);
  const walk = (dir) => {
    let names;
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|mjs|js|c|sh)$/.test(name)) {
        for (const match of readFileSync(path, 'utf8').matchAll(/tmpdir\(\),\s*[`'"]([A-Za-z0-9._-]{3,})/g)) prefixes.add(match[1]);
      }
    }
  };
  for (const dir of dirs) walk(join(root, dir));
  return [...prefixes].sort();
}

/** The names a sandbox gives its temp dir and canary, with the PID of the process that made them. */
const OWNED = /^opencode-pty-(?:sandbox|canary)-(\d+)-/;

/**
 * @param {{ start: string[], end: string[], suites: { name: string, pid?: number, before: string[], after: string[] }[], prefixes: string[], concurrent?: number[] }} run
 *   concurrent: other runners seen at the run's start or end (otherRunners)
 * @returns {{ leftovers: { name: string, suite: string }[], notes: string[], fail: boolean }}
 */
export function tempLeftovers({ start, end, suites, prefixes, concurrent = [] }) {
  const leftovers = [];
  const notes = [];
  const started = new Set(start);
  for (const name of end) {
    if (started.has(name)) continue;
    const suite = suites.find((s) => !s.before.includes(name) && s.after.includes(name));
    if (!suite) continue; // appeared between our suites (or before the first): not ours to judge
    const owner = OWNED.exec(name);
    if (owner && !suites.some((s) => s.pid === Number(owner[1]))) notes.push(`${name} (appeared while ${suite.name} ran; owned by process ${owner[1]}, no suite of this run)`);
    else if (prefixes.some((prefix) => name.startsWith(prefix))) leftovers.push({ name, suite: suite.name });
    else notes.push(`${name} (appeared while ${suite.name} ran; not a name of ours, so taken for another program's)`);
  }
  if (leftovers.length && concurrent.length) notes.push(`another test run was under way (runner PIDs ${concurrent.join(', ')}): the names left may be its, so they are reported, not failed`);
  return { leftovers, notes, fail: leftovers.length > 0 && concurrent.length === 0 };
}
