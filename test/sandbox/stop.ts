// Tears a sandbox down in escalating steps, each kill only after re-checking the PID is still ours.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { removeCgroup } from './cgroup.ts';
import { SANDBOX_GUARD } from './exec.ts';
import { SandboxError } from './errors.ts';
import { checkHost, type HostSnapshot } from './host-check.ts';
import { pid1Alive } from './namespaces.ts';
import type { BootLog } from './boot-log.ts';
import type { Launched } from './launch.ts';

/** glibc's SIGRTMIN is 34; systemd(1): SIGRTMIN+4 starts poweroff.target, which in a container is an exit. */
const SIGRTMIN_PLUS_4 = 34 + 4;
const STEP_DEADLINE_MS = 5000;

/** Whatever the boot got as far as creating; stop cleans exactly that. */
export interface SandboxResources {
  before: HostSnapshot;
  /** The temp dir's canary (host-check.ts): gone at the check means the temp dir was wiped. */
  canary?: string;
  stateDir: string;
  /** The sandbox's own cgroup on the host (systemd's whole tree). */
  cgroup?: string;
  log?: BootLog;
  launched?: Launched;
}

export interface StopReport {
  /** From the first stop step to PID 1 gone, in ms (undefined when it was gone already). */
  exitMs?: number;
  /** Which step ended PID 1. */
  endedBy?: 'already-gone' | 'systemctl-exit' | 'SIGRTMIN+4' | 'SIGKILL';
}

async function exitedWithin(launched: Launched, ms: number): Promise<boolean> {
  const deadline = new AbortController();
  const timer = delay(ms, false, { signal: deadline.signal }).catch(() => false);
  const result = await Promise.race([launched.exited.then(() => true), timer]);
  deadline.abort();
  return result;
}

async function closedWithin(launched: Launched, ms: number): Promise<boolean> {
  const deadline = new AbortController();
  const timer = delay(ms, false, { signal: deadline.signal }).catch(() => false);
  const result = await Promise.race([launched.closed.then(() => true), timer]);
  deadline.abort();
  return result;
}

function hasExited(launched: Launched): boolean {
  return launched.child.exitCode !== null || launched.child.signalCode !== null;
}

/** Sends a signal to PID 1 only while /proc/PID/ns/pid still is the sandbox's namespace (and PID 1 the same process). */
function signalIfOurs(launched: Launched, signal: number | NodeJS.Signals): void {
  if (!pid1Alive(launched)) return;
  try {
    process.kill(launched.pid1, signal);
  } catch {
    // Gone between the check and the kill.
  }
}

/** `systemctl exit` inside; resolves whatever happens, since PID 1 leaving kills it too. */
function systemctlExit(pid1: number): Promise<void> {
  return new Promise((resolve) => {
    execFile('nsenter', ['--target', String(pid1), '--all', '--root', '--wd', '--', ...SANDBOX_GUARD, 'systemctl', 'exit'], { timeout: STEP_DEADLINE_MS }, () =>
      resolve(),
    );
  });
}

export async function stopSystemd(launched: Launched): Promise<StopReport> {
  if (hasExited(launched)) return { endedBy: 'already-gone' };
  const start = performance.now();
  const done = (endedBy: StopReport['endedBy']): StopReport => ({ exitMs: performance.now() - start, endedBy });
  if (pid1Alive(launched)) void systemctlExit(launched.pid1);
  if (await exitedWithin(launched, STEP_DEADLINE_MS)) return done('systemctl-exit');
  signalIfOurs(launched, SIGRTMIN_PLUS_4);
  if (await exitedWithin(launched, STEP_DEADLINE_MS)) return done('SIGRTMIN+4');
  signalIfOurs(launched, 'SIGKILL');
  if (await exitedWithin(launched, STEP_DEADLINE_MS)) return done('SIGKILL');
  // unshare's --kill-child takes PID 1 with it.
  launched.child.kill('SIGKILL');
  if (await exitedWithin(launched, STEP_DEADLINE_MS)) return done('SIGKILL');
  throw new SandboxError('SANDBOX_STOP_FAILED', `the sandbox's systemd (pid ${launched.pid1}) survived every stop step`);
}

function removeStateDir(stateDir: string): void {
  // Never recurse into something mounted below our dir: that would delete through the mount.
  const mounted = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined && (point === stateDir || point.startsWith(`${stateDir}/`)));
  if (mounted.length) throw new SandboxError('SANDBOX_STOP_FAILED', `refusing to remove ${stateDir}: mounts below it: ${mounted.join(', ')}`);
  rmSync(stateDir, { recursive: true, force: true });
}

/** The whole teardown: systemd, boot log, cgroup, temp dir, then the host check. Throws the first failure after doing all it can. */
export async function teardown(resources: SandboxResources): Promise<StopReport> {
  const failures: unknown[] = [];
  let report: StopReport = {};
  if (resources.launched) {
    try {
      report = await stopSystemd(resources.launched);
    } catch (error) {
      failures.push(error);
    }
  }
  // In order: the log is complete once PID 1 is gone; the cgroup empties with its namespace.
  const steps: (() => unknown)[] = [
    async () => {
      const launched = resources.launched;
      // PID 1 is gone here; script(1) copies the console's last bytes and exits. Should it linger,
      // it is our own child: kill it by its PID rather than hang the test run.
      if (launched && !(await closedWithin(launched, STEP_DEADLINE_MS))) {
        launched.child.kill('SIGKILL');
        launched.child.stdout?.destroy();
        launched.child.stderr?.destroy();
        failures.push(new SandboxError('SANDBOX_STOP_FAILED', `the sandbox's launcher (pid ${launched.child.pid}) outlived PID 1 and was killed`));
      }
      resources.log?.finish();
    },
    () => resources.cgroup && removeCgroup(resources.cgroup),
    () => removeStateDir(resources.stateDir),
    () =>
      checkHost(resources.before, {
        canary: resources.canary,
        pidNamespace: resources.launched,
        cgroup: resources.cgroup,
        stateDir: resources.stateDir,
      }),
  ];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `stopping the sandbox failed ${failures.length} ways: ${failures.map(String).join('\n')}`);
  return report;
}
