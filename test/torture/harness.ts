// Torture harness, host side: a deployed supervisor, the driver as the agent service's main process,
// and the baseline every class must return to (broker fds, session units, supervisor processes).
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForNode } from '../support/bundle.ts';
import { appeared } from '../support/file-appeared.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, BROKER_UNIT, INSTALL_DIR, deploy, deployConfig } from '../sandbox/deploy.ts';
import type { RawCase, RawResult, SessionResult } from './driver.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(root, '.sandbox', 'torture', 'torture-driver.js');
/** Beside the addon, so the bundle's addon loader finds it. */
export const DRIVER = `${INSTALL_DIR}/torture-driver.js`;

/** Bundles the driver (the client library, the codec and the addon loader) once per run. */
export async function buildDriver(): Promise<void> {
  await bundleForNode(join(root, 'test/torture/driver.ts'), BUNDLE);
}

/** Built once per process: a bundle left by an earlier run may be of older sources. */
let built: Promise<void> | undefined;

export async function deployTorture(sandbox: Sandbox, overrides: Record<string, unknown> = {}): Promise<void> {
  await (built ??= buildDriver());
  await deploy(sandbox, deployConfig(sandbox, overrides));
  await sandbox.install([{ content: readFileSync(BUNDLE, 'utf8'), to: DRIVER, mode: 0o644 }]);
}

/** The driver running as the agent service's main process. */
export class Driver {
  static #starts = 0;
  #socket: string;
  readonly mainPid: number;

  #sandbox: Sandbox;
  #service: string;

  private constructor(sandbox: Sandbox, service: string, socket: string, mainPid: number) {
    this.#sandbox = sandbox;
    this.#service = service;
    this.#socket = socket;
    this.mainPid = mainPid;
  }

  static async start(sandbox: Sandbox, service = AGENT_SERVICE): Promise<Driver> {
    // A fresh name each start: a restarted agent's old socket file may still be there.
    const inside = `${sandbox.client.home}/torture-${service}-${(Driver.#starts += 1)}.sock`;
    const { mainPid } = await sandbox.startClientService(service, ['/usr/bin/node', DRIVER, 'serve', inside, sandbox.client.home]);
    const host = `${sandbox.root}${inside}`;
    await appeared(host, 10_000);
    return new Driver(sandbox, service, host, mainPid);
  }

  async command<T>(command: unknown): Promise<T> {
    const connection = net.createConnection(this.#socket);
    connection.end(`${JSON.stringify(command)}\n`);
    let text = '';
    connection.on('data', (chunk) => (text += chunk));
    await once(connection, 'close');
    if (!text) throw new Error(`driver gave no answer to ${JSON.stringify(command)}:\n${await this.#sandbox.journal(this.#service)}`);
    const answer = JSON.parse(text) as T & { failed?: string };
    if (answer.failed) throw new Error(`driver: ${answer.failed}`);
    return answer;
  }

  /** `count` sessions at once from the agent's MainPID. */
  async sessions(count: number, argv: string[]): Promise<SessionResult[]> {
    return (await this.command<{ results: SessionResult[] }>({ sessions: { count, argv } })).results;
  }

  raw(spec: RawCase): Promise<RawResult> {
    return this.command<RawResult>({ raw: spec });
  }

  async raws(specs: RawCase[]): Promise<RawResult[]> {
    return (await this.command<{ results: RawResult[] }>({ raws: specs })).results;
  }

  /** The same command run by a child of the agent (inside its cgroup, not the MainPID). */
  async asChild<T>(command: unknown): Promise<T> {
    const run = await this.command<{ code: number; stdout: string; stderr: string }>({ run: ['/usr/bin/node', DRIVER, 'once', JSON.stringify(command)] });
    if (run.code !== 0) throw new Error(`driver child: ${run.stderr}`);
    return JSON.parse(run.stdout) as T;
  }

  background(argv: string[]): Promise<{ pid: number }> {
    return this.command({ run: argv, background: true });
  }

  release(): Promise<unknown> {
    return this.command({ release: true });
  }
}

export interface Baseline {
  brokerFds: number;
  units: string[];
  processes: number;
}

export async function brokerMainPid(sandbox: Sandbox): Promise<number> {
  const show = await sandbox.systemctl('show', '--property=MainPID', '--value', BROKER_UNIT);
  return Number(show.stdout.trim());
}

/** Broker fds (0 when not running), session units, and processes in the broker's and the sessions' cgroups. */
export async function measure(sandbox: Sandbox): Promise<Baseline> {
  const pid = await brokerMainPid(sandbox);
  const fds = pid > 0 ? Number((await sandbox.exec(['sh', '-c', `ls /proc/${pid}/fd | wc -l`])).stdout.trim()) : 0;
  const units = (await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*')).stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0]!)
    .filter(Boolean);
  const procs = await sandbox.exec([
    'sh',
    '-c',
    'cat /sys/fs/cgroup/system.slice/opencode-pty-supervisor@broker.service/cgroup.procs /sys/fs/cgroup/*.slice/opencode-pty-session-*/cgroup.procs 2>/dev/null | wc -l',
  ]);
  return { brokerFds: fds, units, processes: Number(procs.stdout.trim()) };
}

export async function brokerRss(sandbox: Sandbox): Promise<number> {
  const pid = await brokerMainPid(sandbox);
  if (!(pid > 0)) return 0;
  const status = (await sandbox.exec(['cat', `/proc/${pid}/status`])).stdout;
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

/** Re-measures until the baseline is back (units stop asynchronously), or returns the last difference. */
export async function settle(sandbox: Sandbox, baseline: Baseline, timeoutMs = 20_000): Promise<{ fds: number; units: number; processes: number }> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
    const now = await measure(sandbox);
    const leaked = { fds: now.brokerFds - baseline.brokerFds, units: now.units.length - baseline.units.length, processes: now.processes - baseline.processes };
    if ((leaked.fds <= 0 && leaked.units <= 0 && leaked.processes <= 0) || Date.now() > deadline) return leaked;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
