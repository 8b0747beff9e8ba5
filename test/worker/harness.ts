// Test harness for worker processes: starts a real worker against a sandbox's bus, hands it a
// connection the way the broker does, and speaks the protocol to it through a raw client.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, closeSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { DEFAULT_LIMITS, DEFAULT_SESSION, type Config, type SessionConfig } from '../../src/config/schema.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { ControlDecoder, encodeControl, type PeerIdentity, type WorkerMessage } from '../../src/control/broker-worker.ts';
import { bootSandbox, SOCKET_GROUP, type Sandbox } from '../sandbox/index.ts';
import { HELPER_MODE } from '../sandbox/deploy.ts';
import { bounded, descriptorReport, processState, workerReportArgs } from './stall-report.ts';
import { RawClient, type StartOptions } from '../support/frame-client.ts';

export const HELPER_INSIDE = '/opt/opencode-pty/opencode-pty-session';
const WORKER_MAIN = fileURLToPath(new URL('../../src/worker/entry.ts', import.meta.url));
const HELPER_BUILT = fileURLToPath(new URL('../../build/Release/opencode-pty-session', import.meta.url));

/** A sandbox with the helper installed and a work directory owned by the client (host path and path inside). */
export async function bootWorkerSandbox(name: string): Promise<{ sandbox: Sandbox; workDir: string; workInside: string }> {
  const sandbox = await bootSandbox({ name });
  await installHelper(sandbox);
  const workInside = `${sandbox.client.home}/work`;
  const workDir = `${sandbox.root}${workInside}`;
  mkdirSync(workDir, { recursive: true });
  chownSync(workDir, sandbox.client.uid, sandbox.client.gid);
  return { sandbox, workDir, workInside };
}

/** A file (with `content`) or directory under the sandbox, made through its root and given to the client. */
export function plantAsClient(sandbox: Sandbox, inside: string, content?: string): void {
  const path = `${sandbox.root}${inside}`;
  if (content === undefined) mkdirSync(path, { recursive: true });
  else writeFileSync(path, content);
  chownSync(path, sandbox.client.uid, sandbox.client.gid);
}

export async function installHelper(sandbox: Sandbox): Promise<void> {
  await sandbox.install([{ from: HELPER_BUILT, to: HELPER_INSIDE, mode: HELPER_MODE }]);
}

export function workerConfig(sandbox: Sandbox, overrides: Partial<Config> = {}): Config {
  return {
    client: { ...sandbox.client, service: null },
    requireClientUnit: false,
    socketPath: '/run/opencode-pty/supervisor.sock',
    socketGroup: SOCKET_GROUP.name,
    socketGid: SOCKET_GROUP.gid,
    unitPrefix: 'opencode-pty-',
    helperPath: HELPER_INSIDE,
    limits: { ...DEFAULT_LIMITS },
    // Warm units off unless a suite asks (withSession): these suites check a fresh unit's text and count units.
    session: { ...DEFAULT_SESSION, environmentPolicy: 'allowlist', environmentAllowlist: ['LANG', 'OCPTY_ALLOWED'], warmUnits: 0 },
    ...overrides,
  };
}

/** workerConfig with some session settings changed (the rest of the test session settings kept). */
export function withSession(config: Config, session: Partial<SessionConfig>): Config {
  return { ...config, session: { ...config.session, ...session } };
}

export interface HandOffOptions {
  /** The session's number in the broker's messages; 1 by default. */
  id?: number;
  /** Who the peer is; this process by default. */
  peer?: Partial<PeerIdentity>;
  /** The START deadline; 5 s by default. */
  deadlineMs?: number;
  /** The broker's offer to take the worker back after a clean end (absent by default). */
  reuse?: boolean;
  /** The protocol version the broker negotiated; absent: a message as before version 2 (1). */
  version?: number;
}

/** A worker process and its control channel. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly control: FdSocket;
  readonly messages: WorkerMessage[] = [];
  readonly exited: Promise<number | null>;
  stderr = '';
  /** Where the worker writes its diagnostic report when a wait stalls (stall-report.ts). */
  readonly reportDir = mkdtempSync(join(tmpdir(), 'worker-report-'));
  #waiters: Array<() => void> = [];

  constructor(sandbox: Sandbox, config: Config) {
    const [ours, theirs] = native().socketpair();
    this.child = spawn(process.execPath, [...workerReportArgs(this.reportDir), '--import', 'tsx', WORKER_MAIN], {
      stdio: ['ignore', 'inherit', process.env.WORKER_STDERR ? 'inherit' : 'pipe', theirs],
      env: { ...process.env, OPENCODE_PTY_WORKER_CONFIG: JSON.stringify(config), OPENCODE_PTY_BUS_ADDRESS: sandbox.busAddress },
    });
    closeSync(theirs);
    this.child.stderr?.on('data', (chunk) => (this.stderr += chunk));
    this.exited = once(this.child, 'exit').then(([code]) => {
      rmSync(this.reportDir, { recursive: true, force: true });
      return code as number | null;
    });
    this.control = new FdSocket(ours);
    const decoder = new ControlDecoder();
    this.control.startReading((chunk) => {
      for (const message of decoder.push(chunk)) this.messages.push(message as WorkerMessage);
      for (const waiter of this.#waiters.splice(0)) waiter();
    });
    this.control.on('end', () => this.control.close());
    // A worker that exits with a message of ours unread (a shutdown racing its own end) resets the
    // channel: POLLERR after every byte it sent was read (fd-socket.ts), an end like EOF, not a crash.
    this.control.on('error', () => this.control.close());
  }

  waitFor<T extends WorkerMessage['type']>(type: T): Promise<Extract<WorkerMessage, { type: T }>> {
    return bounded(`waiting for the worker's '${type}'`, this.#waitFor(type), () => this.stallReport());
  }

  /** The worker's exit code, bounded like every wait here. */
  exitCode(): Promise<number | null> {
    return bounded('waiting for the worker to exit', this.exited, () => this.stallReport());
  }

  /** What this worker and this process hold and do, for a wait that stalled (stall-report.ts). */
  async stallReport(client?: RawClient): Promise<string> {
    const pid = this.child.pid;
    const alive = pid !== undefined && this.child.exitCode === null && this.child.signalCode === null;
    const lines = [
      `worker ${pid}: ${alive ? 'alive' : `exited (${this.child.signalCode ?? this.child.exitCode})`}; its messages: ${JSON.stringify(this.messages)}`,
      client ? `client fd ${client.socket.fd}: ended ${client.ended}, frames ${JSON.stringify(client.frames.map((f) => (f.type === 'output' ? 'output' : f)), (_, v) => (typeof v === 'bigint' ? String(v) : v))}, ${client.raw.length} bytes` : '',
      alive ? await processState(pid, this.reportDir) : '',
      descriptorReport(alive ? [pid] : []),
      `worker stderr:\n${this.stderr}`,
    ];
    return lines.filter(Boolean).join('\n');
  }

  async #waitFor<T extends WorkerMessage['type']>(type: T): Promise<Extract<WorkerMessage, { type: T }>> {
    for (;;) {
      const found = this.messages.find((message) => message.type === type);
      if (found) return found as Extract<WorkerMessage, { type: T }>;
      if (this.child.exitCode !== null) throw new Error(`worker exited before '${type}': ${this.stderr}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        this.child.once('exit', () => resolve());
      });
    }
  }

  /** Hands a connection over as the broker does: the fd and our own pidfd on one message. */
  handOff(clientFd: number, options: HandOffOptions = {}): void {
    const pidfd = native().pidfdOpen(process.pid);
    const peer: PeerIdentity = { pid: process.pid, uid: process.getuid!(), gid: process.getgid!(), cgroup: null, ...options.peer };
    const { id = 1, deadlineMs = 5000, reuse, version } = options;
    // No version: the message as a broker before version 2 sent it (the worker takes 1).
    const message = { type: 'session' as const, id, peer, deadlineMs, ...(reuse ? { reuse } : {}), ...(version === undefined ? {} : { version }) };
    this.control.write(encodeControl(message), [clientFd, pidfd]);
  }

  /** Hands over a fresh connection (as handOff does) and returns the raw client on our end of it. */
  connect(options: HandOffOptions = {}): RawClient {
    const [ours, theirs] = native().socketpair();
    this.handOff(theirs, options);
    const client = new RawClient(ours, options.version ?? 1);
    client.worker = this;
    return client;
  }

  shutdown(): void {
    this.control.write(encodeControl({ type: 'shutdown' }));
  }
}

// The raw client is support/frame-client.ts's, the one all suites use.
export { RawClient, type StartOptions } from '../support/frame-client.ts';

/** Session units of the supervisor's prefix still loaded in the sandbox. */
export async function sessionUnits(sandbox: Sandbox): Promise<string[]> {
  const result = await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*');
  return result.stdout.split('\n').map((line) => line.trim().split(/\s+/)[0]!).filter(Boolean);
}

export interface WorkerSession {
  worker: WorkerProcess;
  client: RawClient;
}

export interface SessionOptions extends StartOptions {
  /** The worker's configuration; workerConfig(sandbox) when absent. */
  config?: Config;
  /** The protocol version handed over with the connection (HandOffOptions). */
  version?: number;
}

/** A ready worker handed a fresh connection, START not yet sent. */
export async function connectWorker(sandbox: Sandbox, options: Pick<SessionOptions, 'config' | 'version'> = {}): Promise<WorkerSession> {
  const worker = new WorkerProcess(sandbox, options.config ?? workerConfig(sandbox));
  await worker.waitFor('ready');
  return { worker, client: worker.connect(options.version === undefined ? {} : { version: options.version }) };
}

/** A ready worker handed a fresh connection, with START of `argv` in `dir` sent. */
export async function startSession(sandbox: Sandbox, dir: string, argv: string[], options: SessionOptions = {}): Promise<WorkerSession> {
  const session = await connectWorker(sandbox, options);
  session.client.start(dir, argv, options);
  return session;
}

/** The worker exited by itself with 0 and no session unit is left. */
export async function expectNoUnits(sandbox: Sandbox, worker: WorkerProcess): Promise<void> {
  assert.is(await worker.exitCode(), 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
}
