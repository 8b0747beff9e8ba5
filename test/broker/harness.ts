// Broker tests' helpers: a deployed supervisor in a sandbox, the agent stand-in, and test peers.
import { once } from 'node:events';
import net from 'node:net';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { appeared } from '../support/file-appeared.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, BROKER_UNIT, INSTALL_DIR, SOCKET_PATH, deploy, deployConfig } from '../sandbox/deploy.ts';

export const PEER = `${INSTALL_DIR}/test/peer.mjs`;
const AGENT = `${INSTALL_DIR}/test/agent.mjs`;
const here = dirname(fileURLToPath(import.meta.url));

export interface PeerReport {
  ms: number;
  frame: string;
  code?: number;
  message?: string;
  closed?: boolean;
  error?: string;
  frames?: string[];
}

export async function deployBroker(sandbox: Sandbox, overrides: Record<string, unknown> = {}): Promise<void> {
  await deploy(sandbox, deployConfig(sandbox, overrides));
  await sandbox.install([
    { from: `${here}/peer.mjs`, to: PEER, mode: 0o644 },
    { from: `${here}/agent.mjs`, to: AGENT, mode: 0o644 },
  ]);
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

/** The agent stand-in, running as the agent service's main process. */
export class Agent {
  #socket: string;
  readonly mainPid: number;

  #sandbox: Sandbox;

  private constructor(sandbox: Sandbox, socket: string, mainPid: number) {
    this.#sandbox = sandbox;
    this.#socket = socket;
    this.mainPid = mainPid;
  }

  static async start(sandbox: Sandbox): Promise<Agent> {
    const inside = `${sandbox.client.home}/agent.sock`;
    const { mainPid } = await sandbox.startClientService(AGENT_SERVICE, ['/usr/bin/node', AGENT, inside, SOCKET_PATH]);
    const host = `${sandbox.root}${inside}`;
    await appeared(host, 10_000);
    return new Agent(sandbox, host, mainPid);
  }

  /** One command; a failure says what became of the agent (its state and journal), not only the errno. */
  async command<T>(command: unknown): Promise<T> {
    const connection = net.createConnection(this.#socket);
    connection.end(`${JSON.stringify(command)}\n`);
    let text = '';
    let failure: Error | undefined;
    connection.on('data', (chunk) => (text += chunk));
    connection.on('error', (error) => (failure = error));
    await once(connection, 'close');
    const answer = failure || !text ? undefined : (JSON.parse(text) as T & { agentError?: string });
    if (!answer || answer.agentError) {
      const state = (await this.#sandbox.systemctl('show', '--property=ActiveState,SubState,MainPID,Result,ExecMainStatus', AGENT_SERVICE)).stdout;
      const why = failure?.message ?? answer?.agentError ?? 'no answer';
      throw new Error(`agent command ${JSON.stringify(command)} failed: ${why}\n${state}${await this.#sandbox.journal(AGENT_SERVICE)}`);
    }
    return answer;
  }

  /** Connections made by the agent's main process itself. */
  peers(count: number, mode: 'silent' | 'hello' | 'hello-idle' | 'junk', hold = false): Promise<{ reports: PeerReport[] }> {
    return this.command({ peers: { count, mode, hold } });
  }

  /** A CLI session run by a child of the agent (inside its cgroup). */
  session(argv: string[], background = false): Promise<{ code: number | null; stdout: string; stderr: string; pid?: number }> {
    return this.command({ run: ['/usr/bin/node', `${INSTALL_DIR}/cli.js`, 'run', '--socket', SOCKET_PATH, '--', ...argv], background });
  }

  /** Test peers run by a child of the agent (inside its cgroup, not its MainPID). */
  async childPeers(count: number, mode: 'silent' | 'hello' | 'drip' | 'junk'): Promise<PeerReport[]> {
    const run = await this.command<{ code: number; stdout: string; stderr: string }>({ run: ['/usr/bin/node', PEER, SOCKET_PATH, String(count), mode] });
    if (run.code !== 0) throw new Error(`child peer failed: ${run.stderr}`);
    return run.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as PeerReport);
  }

  release(): Promise<unknown> {
    return this.command({ release: true });
  }
}

export async function stopAgent(sandbox: Sandbox): Promise<void> {
  await sandbox.systemctl('stop', AGENT_SERVICE);
}

/** Stops the broker (SIGTERM, it ends its sessions); the socket stays, so the next connection starts a new one. */
export async function stopBroker(sandbox: Sandbox): Promise<void> {
  const result = await sandbox.systemctl('stop', BROKER_UNIT);
  if (result.code !== 0) throw new Error(`cannot stop the broker: ${result.stderr}`);
}

export async function brokerProperty(sandbox: Sandbox, property: string): Promise<string> {
  const result = await sandbox.systemctl('show', `--property=${property}`, '--value', BROKER_UNIT);
  return result.stdout.trim();
}

/** Re-runs `probe` until it returns true; for states that have no event to wait on from here. */
export async function until(probe: () => Promise<boolean>, timeoutMs: number, what: string, explain?: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 10; !(await probe()); pause = Math.min(pause * 2, 200)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${explain ? `: ${await explain()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
