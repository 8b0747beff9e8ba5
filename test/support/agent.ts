// The agent stand-in seen from the host: support/agent-main.ts, bundled and installed beside the
// addon, running as the agent service's main process; one JSON command per connection.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import type { RawCase, RawResult, SandboxOptions, SessionResult } from './agent-main.ts';
import type { KeepAnswer, KeepOrder } from './agent-keep.ts';
import { bundleForNode } from './bundle.ts';
import { appeared } from './file-appeared.ts';
import type { PeerReport } from './peer.mjs';

export type { PeerReport } from './peer.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(root, '.sandbox', 'agent', 'test-agent.js');
/** Beside the addon, so the bundle's addon loader finds it. */
export const AGENT_SCRIPT = `${INSTALL_DIR}/test-agent.js`;
/** Test peers (support/peer.mjs), run as a command by the agent's children or by other accounts. */
export const PEER = `${INSTALL_DIR}/test/peer.mjs`;

/** Built once per process: a bundle left by an earlier run may be of older sources. */
let built: Promise<void> | undefined;

/** Bundles the stand-in (the client library, the codec and the addon loader). */
export function buildAgent(): Promise<void> {
  return (built ??= bundleForNode(join(root, 'test/support/agent-main.ts'), BUNDLE));
}

/** Installs the stand-in and the test peer into a sandbox the supervisor is deployed in. */
export async function installAgent(sandbox: Sandbox): Promise<void> {
  await buildAgent();
  await sandbox.install([
    { content: readFileSync(BUNDLE, 'utf8'), to: AGENT_SCRIPT, mode: 0o644 },
    { from: join(root, 'test/support/peer.mjs'), to: PEER, mode: 0o644 },
  ]);
}

export interface RunResult {
  code: number | null;
  signal?: string | null;
  stdout: string;
  stderr: string;
  error?: string;
}

/** The stand-in running as an agent service's main process. */
export class Agent {
  static #starts = 0;
  readonly mainPid: number;
  #socket: string;
  #sandbox: Sandbox;
  #service: string;

  private constructor(sandbox: Sandbox, service: string, socket: string, mainPid: number) {
    this.#sandbox = sandbox;
    this.#service = service;
    this.#socket = socket;
    this.mainPid = mainPid;
  }

  /** Starts it as `service` (the agent service the supervisor admits, unless told otherwise). */
  static async start(sandbox: Sandbox, service = AGENT_SERVICE): Promise<Agent> {
    // A fresh name each start: a restarted agent's old socket file may still be there.
    const inside = `${sandbox.client.home}/agent-${service}-${(Agent.#starts += 1)}.sock`;
    const { mainPid } = await sandbox.startClientService(service, ['/usr/bin/node', AGENT_SCRIPT, 'serve', inside, sandbox.client.home]);
    const host = `${sandbox.root}${inside}`;
    await appeared(host, 10_000);
    return new Agent(sandbox, service, host, mainPid);
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
    const answer = failure || !text ? undefined : (JSON.parse(text) as T & { failed?: string });
    if (!answer || answer.failed) {
      const state = (await this.#sandbox.systemctl('show', '--property=ActiveState,SubState,MainPID,Result,ExecMainStatus', this.#service)).stdout;
      const why = failure?.message ?? answer?.failed ?? 'no answer';
      throw new Error(`agent command ${JSON.stringify(command)} failed: ${why}\n${state}${await this.#sandbox.journal(this.#service)}`);
    }
    return answer;
  }

  /** `count` sessions at once from the agent's MainPID, through the client library. */
  async sessions(count: number, argv: string[], options?: SandboxOptions): Promise<SessionResult[]> {
    return (await this.command<{ results: SessionResult[] }>({ sessions: { count, argv, options } })).results;
  }

  /** Test peers from the agent's MainPID itself; `hold` keeps them open until release(). */
  peers(count: number, mode: 'silent' | 'hello' | 'hello-idle' | 'junk', hold = false): Promise<{ reports: PeerReport[] }> {
    return this.command({ peers: { count, mode, hold } });
  }

  /** Test peers run by a child of the agent (inside its cgroup, not its MainPID). */
  async childPeers(count: number, mode: 'silent' | 'hello' | 'drip' | 'junk'): Promise<PeerReport[]> {
    const run = await this.command<RunResult>({ run: ['/usr/bin/node', PEER, SOCKET_PATH, String(count), mode] });
    if (run.code !== 0) throw new Error(`child peer failed: ${run.stderr}`);
    return run.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as PeerReport);
  }

  /** A CLI session run by a child of the agent (inside its cgroup). */
  session(argv: string[], background = false): Promise<RunResult & { pid?: number }> {
    return this.command({ run: ['/usr/bin/node', `${INSTALL_DIR}/cli.js`, 'run', '--socket', SOCKET_PATH, '--', ...argv], background });
  }

  /** A kept-session command from the agent's MainPID (agent-keep.ts). */
  keep(order: KeepOrder): Promise<KeepAnswer> {
    return this.command<KeepAnswer>({ keep: order });
  }

  /** The same from a child of the agent (inside its cgroup, not its MainPID). */
  async childKeep(order: KeepOrder): Promise<KeepAnswer> {
    const run = await this.command<RunResult>({ run: ['/usr/bin/node', AGENT_SCRIPT, 'once', JSON.stringify({ keep: order })] });
    if (run.code !== 0) throw new Error(`child failed: ${run.stderr}`);
    return JSON.parse(run.stdout) as KeepAnswer;
  }

  raw(spec: RawCase): Promise<RawResult> {
    return this.command<RawResult>({ raw: spec });
  }

  async raws(specs: RawCase[]): Promise<RawResult[]> {
    return (await this.command<{ results: RawResult[] }>({ raws: specs })).results;
  }

  /** The same command run by a child of the agent (inside its cgroup, not the MainPID). */
  async asChild<T>(command: unknown): Promise<T> {
    const run = await this.command<RunResult>({ run: ['/usr/bin/node', AGENT_SCRIPT, 'once', JSON.stringify(command)] });
    if (run.code !== 0) throw new Error(`agent child: ${run.stderr}`);
    return JSON.parse(run.stdout) as T;
  }

  /** A child process left running until release(). */
  background(argv: string[]): Promise<{ pid: number }> {
    return this.command({ run: argv, background: true });
  }

  /** Closes held peers and ends background children. */
  release(): Promise<unknown> {
    return this.command({ release: true });
  }
}
