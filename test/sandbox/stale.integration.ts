// The sweep of leftovers on a real cgroup2 mount, seen from a run with another temp dir: a sandbox
// cgroup just made and still empty is kept while its owner lives, and removed once its owner is dead.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createCgroup, hostCgroup2Mount, removeCgroup } from './cgroup.ts';
import { sandboxUnavailable } from './index.ts';
import { startTime } from './namespaces.ts';
import { createStateDir, namePrefix, sweepStale, type Owner } from './stale.ts';

const unavailable = sandboxUnavailable();

/** Runs `body` with TMPDIR set to `dir` (tmpdir() reads it on every call). */
async function inTempDir<T>(dir: string, body: () => T | Promise<T>): Promise<T> {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await body();
  } finally {
    // Assigning undefined would store the string 'undefined'.
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/** The record of a process that has exited and been reaped. */
async function deadOwner(): Promise<Owner> {
  const child = spawn('cat', [], { stdio: ['pipe', 'ignore', 'ignore'] });
  await once(child, 'spawn');
  const owner = { pid: child.pid!, start: startTime(child.pid!)! };
  child.stdin!.end();
  await once(child, 'exit');
  return owner;
}

/** Two temp dirs of our own: one for the run that boots, one for the run that sweeps. */
function twoRuns(): { base: string; booting: string; sweeping: string } {
  const base = mkdtempSync(join(tmpdir(), 'stale-sweep-'));
  const booting = join(base, 'booting');
  const sweeping = join(base, 'sweeping');
  mkdirSync(booting);
  mkdirSync(sweeping);
  return { base, booting, sweeping };
}

if (unavailable) {
  if (process.env.CI) test('the sandbox can run here', () => assert.unreachable(`sandbox unavailable: ${unavailable}`));
  else test.skip(`sandbox unavailable: ${unavailable}`, () => {});
} else {
  test('a fresh empty cgroup of a live owner survives a sweep by a run with another temp dir', async () => {
    const { base, booting, sweeping } = twoRuns();
    const stateDir = await inTempDir(booting, createStateDir);
    // What a boot does next; its first process moves in a moment later.
    const cgroup = createCgroup(hostCgroup2Mount()!, basename(stateDir));
    try {
      const removed = await inTempDir(sweeping, sweepStale);
      assert.not.ok(removed.includes(cgroup), `removed ${cgroup}`);
      assert.ok(existsSync(cgroup), 'the cgroup is still there');
    } finally {
      await removeCgroup(cgroup);
      rmSync(base, { recursive: true, force: true });
    }
  });

  test('an empty cgroup whose owner is dead is removed by a run with another temp dir', async () => {
    const { base, booting, sweeping } = twoRuns();
    const stateDir = mkdtempSync(join(booting, namePrefix(await deadOwner())));
    const cgroup = createCgroup(hostCgroup2Mount()!, basename(stateDir));
    try {
      const removed = await inTempDir(sweeping, sweepStale);
      assert.ok(removed.includes(cgroup), `kept ${cgroup}`);
      assert.not.ok(existsSync(cgroup));
    } finally {
      await removeCgroup(cgroup);
      rmSync(base, { recursive: true, force: true });
    }
  });
}

test.run();
