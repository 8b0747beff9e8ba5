// The test sandbox: a real systemd booted as PID 1 in private namespaces, one per test file.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { sandboxUnavailable } from './availability.ts';
import { BootLog } from './boot-log.ts';
import { createCgroup, hostCgroup2Mount } from './cgroup.ts';
import { SandboxError } from './errors.ts';
import { placeCanary, snapshotHost } from './host-check.ts';
import { launch } from './launch.ts';
import { Sandbox, type SandboxParts } from './sandbox.ts';
import { createStateDir, sweepStale } from './stale.ts';
import { CLIENT, OTHER, writeState } from './seed.ts';
import { teardown, type SandboxResources, type StopReport } from './stop.ts';

export { Sandbox } from './sandbox.ts';
export { SandboxError, type SandboxErrorCode } from './errors.ts';
export type { ExecOptions, ExecResult } from './exec.ts';
export type { TestAccount } from './seed.ts';
export { CLIENT, OTHER, SOCKET_GROUP } from './seed.ts';
export { sandboxUnavailable } from './availability.ts';

/** Boot logs stay here after stop, one file per sandbox name, so a failed run can be read afterwards. */
const LOG_DIR = fileURLToPath(new URL('../../.sandbox/', import.meta.url));
const BOOT_DEADLINE_MS = 20_000;
const NAME = /^[a-z0-9][a-z0-9-]{0,47}$/;

export interface BootOptions {
  /** Host name and container= value; also names the boot log. Default 'opencode-pty-test'. Use one per test file. */
  name?: string;
  /** Host directory bound at /run/opencode-pty; create it before booting (the host check snapshots /tmp at boot). Default: a fresh one in the sandbox's temp dir. */
  runDir?: string;
  /** Receives the stop figures (used by the measurement script). */
  onStop?: (report: StopReport) => void;
}

function run(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: BOOT_DEADLINE_MS }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Waits until systemd says startup finished (`is-system-running --wait` blocks on systemd's own
 * state) and the system bus answers from the host. The probe decides; the loop only retries
 * while systemd's private socket does not exist yet.
 */
async function waitForSystem(sandbox: Sandbox, exited: Promise<unknown>, deadline: number): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  for (let pause = 1; ; pause = Math.min(pause * 2, 20)) {
    if (gone) throw new SandboxError('SANDBOX_BOOT_FAILED', `the sandbox's systemd exited during boot:\n${sandbox.bootLog()}`);
    if (Date.now() > deadline) throw new SandboxError('SANDBOX_BOOT_TIMEOUT', `the sandbox did not come up within ${BOOT_DEADLINE_MS} ms:\n${sandbox.bootLog()}`);
    const state = await sandbox.exec(['systemctl', 'is-system-running', '--wait'], { timeoutMs: BOOT_DEADLINE_MS }).catch(() => undefined);
    const said = state?.stdout.trim();
    if (said === 'running') break;
    if (said === 'degraded' || said === 'maintenance' || said === 'stopping') {
      const failed = await sandbox.systemctl('--failed', '--full');
      throw new SandboxError('SANDBOX_BOOT_FAILED', `the sandbox came up ${said}:\n${failed.stdout}\n${sandbox.bootLog()}`);
    }
    await delay(pause);
  }
  const ping = await run('busctl', [`--address=${sandbox.busAddress}`, 'call', 'org.freedesktop.systemd1', '/org/freedesktop/systemd1', 'org.freedesktop.DBus.Peer', 'Ping']);
  if (ping.code !== 0) throw new SandboxError('SANDBOX_BOOT_FAILED', `the sandbox's system bus does not answer: ${ping.stderr}\n${sandbox.bootLog()}`);
}

export async function bootSandbox(options: { name?: string; runDir?: string } & BootOptions = {}): Promise<Sandbox> {
  const reason = sandboxUnavailable();
  if (reason) throw new SandboxError('SANDBOX_UNAVAILABLE', reason);
  const name = options.name ?? 'opencode-pty-test';
  if (!NAME.test(name)) throw new TypeError(`sandbox name ${JSON.stringify(name)} must match ${NAME}`);
  const start = performance.now();
  const deadline = Date.now() + BOOT_DEADLINE_MS;

  await sweepStale();
  // Snapshot first, then create our temp dir: stop removes it, so the comparison is exact.
  const before = snapshotHost();
  const resources: SandboxResources = { before, canary: placeCanary(), stateDir: createStateDir() };
  let sandbox: Sandbox | undefined;
  try {
    const runDir = options.runDir ?? join(resources.stateDir, 'run-opencode-pty');
    if (!options.runDir) {
      mkdirSync(runDir);
      chmodSync(runDir, 0o755);
    }
    writeState(resources.stateDir, name, [CLIENT, OTHER]);
    resources.cgroup = createCgroup(hostCgroup2Mount()!, basename(resources.stateDir));
    resources.log = new BootLog(join(LOG_DIR, `${name}.boot.log`));
    resources.launched = await launch({ name, stateDir: resources.stateDir, runDir, cgroup: resources.cgroup, log: resources.log });
    const launched = resources.launched;
    const parts: SandboxParts = {
      name,
      runDir,
      client: CLIENT,
      other: OTHER,
      launched,
      log: resources.log,
      bootMs: Number.NaN,
      teardown: async () => {
        // Not `onStop?.(await teardown())`: an optional call skips evaluating its arguments.
        const report = await teardown(resources);
        options.onStop?.(report);
      },
    };
    sandbox = new Sandbox(parts);
    await waitForSystem(sandbox, launched.exited, deadline);
    parts.bootMs = performance.now() - start;
    return sandbox;
  } catch (error) {
    // Clean up whatever exists; the boot error is the one worth reporting, the rest rides along.
    const cleanup = sandbox ? sandbox.stop() : teardown(resources);
    await cleanup.catch((cleanupError: unknown) => {
      if (error instanceof Error) error.message += `\n(and stopping the failed sandbox: ${String(cleanupError)})`;
    });
    throw error;
  }
}
