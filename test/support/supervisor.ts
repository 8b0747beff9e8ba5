// The supervisor in a sandbox, as a host would have it: booted, deployed, with the agent stand-in as
// its client service's main process; and the broker's unit, its sessions and what it holds, seen from
// the host. For integration suites and the bench.
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, BROKER_UNIT, SOCKET_PATH, deploy, deployConfig } from '../sandbox/deploy.ts';
import { Agent, PEER, installAgent, type PeerReport } from './agent.ts';
import { until } from './wait.ts';

/** Deploys the supervisor (config `overrides` on the sandbox's defaults) and installs the agent stand-in. */
export async function deploySupervisor(sandbox: Sandbox, overrides: Record<string, unknown> = {}): Promise<void> {
  await deploy(sandbox, deployConfig(sandbox, overrides));
  await installAgent(sandbox);
}

/** Boots a sandbox named `name` (one per test file), deploys the supervisor, starts the agent. */
export async function bootSupervisor(name: string, overrides: Record<string, unknown> = {}): Promise<{ sandbox: Sandbox; agent: Agent }> {
  const sandbox = await bootSandbox({ name });
  try {
    await deploySupervisor(sandbox, overrides);
    return { sandbox, agent: await Agent.start(sandbox) };
  } catch (error) {
    await sandbox.stop().catch(() => undefined);
    throw error;
  }
}

/** Runs test peers as an account (or a uid/gid pair) outside the agent service. */
export async function peersAs(
  sandbox: Sandbox,
  who: { as?: 'client' | 'other'; uid?: number; gid?: number; groups?: number[] },
  count: number,
  mode: 'silent' | 'hello' | 'drip' | 'junk',
): Promise<PeerReport[]> {
  const result = await sandbox.exec(['/usr/bin/node', PEER, SOCKET_PATH, String(count), mode], { ...who, timeoutMs: 60_000 });
  if (result.code !== 0) throw new Error(`peer failed: ${result.stderr}`);
  return result.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as PeerReport);
}

export async function stopAgent(sandbox: Sandbox, service = AGENT_SERVICE): Promise<void> {
  await sandbox.systemctl('stop', service);
}

/** Stops the broker (SIGTERM, it ends its sessions); the socket stays, so the next connection starts a new one. */
export async function stopBroker(sandbox: Sandbox): Promise<void> {
  const result = await sandbox.systemctl('stop', BROKER_UNIT);
  if (result.code !== 0) throw new Error(`cannot stop the broker: ${result.stderr}`);
}

/** One property of the broker's unit, as `systemctl show --value` prints it. */
export async function brokerProperty(sandbox: Sandbox, property: string): Promise<string> {
  const result = await sandbox.systemctl('show', `--property=${property}`, '--value', BROKER_UNIT);
  return result.stdout.trim();
}

/** The broker's PID inside the sandbox; 0 when it is not running. */
export async function brokerPid(sandbox: Sandbox): Promise<number> {
  return Number(await brokerProperty(sandbox, 'MainPID'));
}

/**
 * The broker and every worker (its unit's whole cgroup) killed, as a crash or an OOM kill would:
 * stopped first, then killed, so no process of it runs a line more (a worker that saw the broker go
 * first would release its session cleanly, which is the shutdown's path, not a crash's). Returns once
 * that broker is gone; systemd starts the next one by itself (the unit's Restart=on-failure).
 */
export async function killSupervisor(sandbox: Sandbox): Promise<void> {
  const before = await brokerPid(sandbox);
  if (before === 0) throw new Error('no broker runs to kill');
  await sandbox.systemctl('kill', '--signal=SIGSTOP', BROKER_UNIT);
  await sandbox.systemctl('kill', '--signal=SIGKILL', BROKER_UNIT);
  await until(async () => (await brokerPid(sandbox)) !== before, 10_000, 'the broker gone');
}

/** Session units of the supervisor's prefix still loaded in the sandbox. */
export async function sessionUnits(sandbox: Sandbox): Promise<string[]> {
  const result = await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*');
  const units: string[] = [];
  for (const line of result.stdout.split('\n')) {
    const [unit, , , , ...description] = line.trim().split(/\s+/);
    if (!unit) continue;
    // A spare's warm unit is no session until a START draws it (its helper then has the program as its child).
    if (description.join(' ') === 'opencode-pty warm session' && (await idleWarm(sandbox, unit))) continue;
    units.push(unit);
  }
  return units;
}

async function idleWarm(sandbox: Sandbox, unit: string): Promise<boolean> {
  const pid = Number((await sandbox.systemctl('show', '--property=MainPID', '--value', unit)).stdout.trim());
  if (!(pid > 0)) return true;
  const children = await sandbox.exec(['cat', `/proc/${pid}/task/${pid}/children`]);
  return children.code !== 0 || children.stdout.trim() === '';
}

/** Waits until the broker holds no session (its status says "0 sessions"): a slot is freed only once its worker has ended. */
export async function sessionsGone(sandbox: Sandbox, timeoutMs = 20_000): Promise<void> {
  let status = '';
  await until(
    async () => (status = await brokerProperty(sandbox, 'StatusText')).startsWith('0 sessions'),
    timeoutMs,
    'the broker to hold no session',
    () => `its status: ${JSON.stringify(status)}`,
  );
}

export interface Baseline {
  brokerFds: number;
  units: string[];
  processes: number;
}

/** Broker fds (0 when not running), session units, and processes in the broker's and the sessions' cgroups. */
export async function measure(sandbox: Sandbox): Promise<Baseline> {
  const pid = await brokerPid(sandbox);
  const fds = pid > 0 ? Number((await sandbox.exec(['sh', '-c', `ls /proc/${pid}/fd | wc -l`])).stdout.trim()) : 0;
  // The sessions' processes, an idle warm unit's helper left out (sessionUnits): the spare's comes and goes.
  const units = await sessionUnits(sandbox);
  const procs = await sandbox.exec([
    'sh',
    '-c',
    `cat /sys/fs/cgroup/system.slice/opencode-pty-supervisor@broker.service/cgroup.procs ${units.map((unit) => `/sys/fs/cgroup/*.slice/${unit}/cgroup.procs`).join(' ')} 2>/dev/null | wc -l`,
  ]);
  return { brokerFds: fds, units, processes: Number(procs.stdout.trim()) };
}

/** Re-measures until the baseline is back (units stop asynchronously), or returns the last difference. */
export async function settle(sandbox: Sandbox, baseline: Baseline, timeoutMs = 20_000): Promise<{ fds: number; units: number; processes: number }> {
  let leaked = { fds: 0, units: 0, processes: 0 };
  const back = async () => {
    const now = await measure(sandbox);
    leaked = { fds: now.brokerFds - baseline.brokerFds, units: now.units.length - baseline.units.length, processes: now.processes - baseline.processes };
    return leaked.fds <= 0 && leaked.units <= 0 && leaked.processes <= 0;
  };
  // The difference is the answer (the caller asserts on it), so running out of time is not an error here.
  await until(back, timeoutMs, 'the baseline').catch(() => undefined);
  return leaked;
}
