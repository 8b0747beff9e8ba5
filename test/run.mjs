// Runs every test file in its own Node process, then the type check, and prints one
// closing line "N passed, N failed" (uvu prints none of its own). Exits 1 on any failure.
// Usage: node test/run.mjs [substring…]  (only files whose path contains one of them)
// It fails too when a suite left a name of ours in the host's temp dir (support/temp-leftovers.mjs).
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { otherRunners, ourPrefixes, tempLeftovers } from './support/temp-leftovers.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2);

function findTests(dir) {
  const found = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    // test/node-majors/node_modules holds whole Node distributions, and no suite.
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules') found.push(...findTests(path));
    }
    else if (/\.(test|integration)\.ts$/.test(name)) found.push(path);
  }
  return found;
}

// A suite that hangs fails instead of stalling the run; its whole process group is ended by PID.
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS || 300_000);
let running;

// If the run itself is stopped, the suite in progress (and the sandbox it owns) goes with it.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (running) {
      try {
        process.kill(-running.pid, 'SIGTERM');
      } catch {}
    }
    process.exit(130);
  });
}

function run(argv, started) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running = child;
    started?.(child.pid);
    const timer = setTimeout(() => {
      process.stdout.write(`\n# timed out after ${FILE_TIMEOUT_MS} ms: ${argv.join(' ')}\n`);
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {}
    }, FILE_TIMEOUT_MS);
    let output = '';
    for (const stream of [child.stdout, child.stderr]) {
      stream.on('data', (chunk) => {
        process.stdout.write(chunk);
        output += chunk;
      });
    }
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? 128, signal, output });
    });
  });
}

// uvu's summary: "Total: N", "Passed: N", "Skipped: N" (no failed line); Total counts the tests run, the skipped not among them.
function uvuCounts(output) {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
  const number = (label) => {
    const match = plain.match(new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'm'));
    return match ? Number(match[1]) : undefined;
  };
  const total = number('Total');
  const passed = number('Passed');
  const skipped = number('Skipped') ?? 0;
  if (total === undefined || passed === undefined) return undefined;
  return { passed, failed: total - passed, skipped };
}

let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];

// Integration suites install the bundles: build them first (esbuild, about a second).
console.log('# node build.mjs');
const built = await run([process.execPath, join(root, 'build.mjs')]);
if (built.code !== 0) {
  failed += 1;
  failures.push('node build.mjs');
}
const files = findTests(join(root, 'test')).filter(
  (file) => filters.length === 0 || filters.some((f) => file.includes(f)),
);
// The client side (library, CLI, node-pty face) runs on Bun too: its suites run once per runtime. Bun
// comes from the npm registry as a dev dependency (its package ships the binary).
const BUN = join(root, 'node_modules/@oven/bun-linux-x64/bin/bun');
const BOTH_RUNTIMES = /^test\/(client|node-pty)\/|^test\/cli\/(run|run-args|resize-lines|keep-args|keep-cli)\.test\.ts$/;
const runs = files.flatMap((file) => {
  const name = relative(root, file);
  const node = { name, argv: [process.execPath, '--import', 'tsx', file] };
  return BOTH_RUNTIMES.test(name) ? [node, { name: `${name} (bun)`, argv: [BUN, file] }] : [node];
});
const listTemp = () => readdirSync(tmpdir());
const tempAtStart = listTemp();
const runnersAtStart = otherRunners();
const suiteTemp = [];
for (const { name, argv } of runs) {
  console.log(`\n# ${name}`);
  const temp = { name, pid: undefined, before: listTemp(), after: [] };
  suiteTemp.push(temp);
  const result = await run(argv, (pid) => (temp.pid = pid));
  temp.after = listTemp();
  const counts = uvuCounts(result.output);
  if (!counts) {
    failed += 1;
    failures.push(`${name} (exited ${result.signal ?? result.code} without a summary)`);
    continue;
  }
  passed += counts.passed;
  skipped += counts.skipped;
  failed += counts.failed;
  if (counts.failed > 0 || result.code !== 0) {
    if (counts.failed === 0) failed += 1;
    failures.push(name);
  }
}

if (filters.length === 0) {
  console.log('\n# tsc --noEmit');
  const tsc = await run([process.execPath, join(root, 'node_modules/typescript/bin/tsc'), '--noEmit']);
  if (tsc.code === 0) passed += 1;
  else {
    failed += 1;
    failures.push('tsc --noEmit');
  }
}

const concurrent = [...new Set([...runnersAtStart, ...otherRunners()])];
const temp = tempLeftovers({ start: tempAtStart, end: listTemp(), suites: suiteTemp, prefixes: ourPrefixes(root), concurrent });
if (temp.notes.length) console.log(`\n# new in ${tmpdir()}, taken for other programs' or runs': ${temp.notes.join('; ')}`);
if (temp.leftovers.length) {
  console.log(`\n# left in ${tmpdir()}:`);
  for (const { name, suite } of temp.leftovers) console.log(`#   ${name} (appeared while ${suite} ran)`);
  if (temp.fail) {
    failed += 1;
    failures.push(`temp dir (${temp.leftovers.length} left)`);
  }
}

if (failures.length) console.log(`\nFailed: ${failures.join(', ')}`);
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed === 0 && runs.length > 0 ? 0 : 1);
