// The bench's hands inside the sandbox: one bundled script, run as the agent service's main process
// (the client library in-process, as a real agent runs it) or as root (the anchors, memory
// figures), or as a flooding process of the account. Every timing is taken here, inside, so
// nsenter and the command channel never count.
// Usage: node bench-probe.js serve SOCKET SUPERVISOR_SOCKET | flood SUPERVISOR_SOCKET MS CONCURRENCY
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { once } from 'node:events';
import { connect, type SandboxOptions, type Session } from '../src/client/index.ts';
import { attachOp } from './probe-attach.ts';
import { cgroupOf, memory, startTicks } from './proc-facts.ts';

type Command = Record<string, any> & { op: string };
const now = () => performance.now();

const [mode, listenPath, supervisorSocket, ...rest] = process.argv.slice(2);
const held: Session[] = [];
/** The broker's main PID, told by the host (the agent cannot ask systemd without a bus of its own). */
let brokerPid = 0;
const heldChildren: ChildProcess[] = [];

/** utime + stime of a process in ms (proc_pid_stat(5), fields 14 and 15), or undefined when gone. */
function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** Processes of a cgroup (paths as /proc/PID/cgroup names them). */
function cgroupPids(cgroup: string): number[] {
  try {
    return readFileSync(`/sys/fs/cgroup${cgroup}/cgroup.procs`, 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * The broker's processes: its main process, then its workers by age. The spare is started after the
 * worker it replaces took its session, so with `sessions` sessions running the newest process beyond
 * that count is the spare.
 */
function brokerProcesses(mainPid: number, sessions: number): { broker: number; workers: number[]; spare: number | undefined } {
  const others = cgroupPids(cgroupOf(mainPid))
    .filter((pid) => pid !== mainPid)
    .sort((a, b) => startTicks(a) - startTicks(b));
  const spare = others.length > sessions ? others.at(-1) : undefined;
  return { broker: mainPid, workers: spare === undefined ? others : others.slice(0, -1), spare };
}

/** Finds a marker in a stream without missing one split across chunks. */
function markerWatch(marker: string): (chunk: Buffer) => boolean {
  let tail = '';
  return (chunk) => {
    const text = tail + chunk.toString('latin1');
    tail = text.slice(-marker.length);
    return text.includes(marker);
  };
}

interface Timed {
  welcome?: number;
  started?: number;
  first?: number;
  exit: number;
  bytes: number;
  code?: number | null;
}

/** One session through the library: connect → WELCOME → STARTED → first OUTPUT → EXIT. */
async function libraryRun(argv: string[], options: { expect?: number; cpu?: boolean; hold?: boolean; start?: SandboxOptions & { cwd?: string } } = {}): Promise<Timed & Record<string, unknown>> {
  const t0 = now();
  const client = await connect(supervisorSocket!);
  const welcome = now() - t0;
  // `start`: START's version 4 options and a directory other than the home (the workspace profile's).
  const session = await client.start({ argv, cwd: process.env.HOME ?? '/', ...options.start });
  const started = now() - t0;
  if (options.hold) {
    held.push(session);
    session.output.resume();
    return { welcome, started, exit: NaN, bytes: 0, helperPid: session.mainPid };
  }
  let first: number | undefined;
  let bytes = 0;
  let cpu: Record<string, number | undefined> | undefined;
  let before: Record<string, number | undefined> | undefined;
  const pids = options.cpu ? { helper: session.mainPid, worker: brokerProcesses(brokerPid, 1).workers[0] } : undefined;
  const snapshot = () => ({ helper: cpuMs(pids!.helper), worker: pids!.worker === undefined ? undefined : cpuMs(pids!.worker), client: process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000 });
  if (pids) before = snapshot();
  let complete: number | undefined;
  session.output.on('data', (chunk: Buffer) => {
    first ??= now() - t0;
    bytes += chunk.length;
    if (options.expect !== undefined && bytes >= options.expect && complete === undefined) {
      complete = now() - t0;
      if (pids) {
        const after = snapshot();
        cpu = Object.fromEntries(Object.entries(after).map(([name, value]) => [name, value === undefined || before![name] === undefined ? undefined : value - before![name]!]));
      }
    }
  });
  const end = await session.exit;
  const exit = now() - t0;
  // The output ends after EXIT (src/client/session.ts): bytes that came in EXIT's chunk, before the
  // listener above flowed, are delivered on the next tick: without waiting for 'end', a fast
  // program's output was sometimes not counted at all (a sample with no first OUTPUT).
  if (!session.output.readableEnded) await once(session.output, 'end');
  return { welcome, started, first, complete, exit, bytes, code: end.status, cpu, t0wall: performance.timeOrigin + t0 };
}


/** One process (the CLI, systemd-run, script): spawn → first stdout byte → exit, bytes counted. */
function spawnRun(argv: string[], options: { uid?: number; gid?: number; cwd?: string; expect?: number; env?: Record<string, string> } = {}): Promise<Timed & Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], uid: options.uid, gid: options.gid, cwd: options.cwd, env: { ...process.env, ...options.env } });
    let first: number | undefined;
    let complete: number | undefined;
    let cpu: number | undefined;
    let bytes = 0;
    let stderr = '';
    let head = Buffer.alloc(0);
    let tail = Buffer.alloc(0);
    child.stdout!.on('data', (chunk: Buffer) => {
      first ??= now() - t0;
      if (head.length < 48) head = Buffer.concat([head, chunk]).subarray(0, 48);
      tail = Buffer.concat([tail, chunk]).subarray(-48);
      bytes += chunk.length;
      if (options.expect !== undefined && bytes >= options.expect && complete === undefined) {
        complete = now() - t0;
        cpu = cpuMs(child.pid!);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ first, complete, exit: now() - t0, bytes, code, cpu: cpu === undefined ? undefined : { client: cpu }, stderr: stderr.slice(-500), head: head.toString('latin1'), tail: tail.toString('latin1') }));
  });
}

interface Terminal {
  write(data: string): void;
  onData(listener: (chunk: Buffer) => void): void;
  /** Stops and restarts reading, so a slow screen can be played. */
  pause(): void;
  resume(): void;
  end(): Promise<unknown>;
}

async function openTerminal(kind: string, argv: string[], account: { uid?: number; gid?: number; cwd?: string; user?: string }): Promise<Terminal> {
  if (kind === 'library') {
    const client = await connect(supervisorSocket!);
    const session = await client.start({ argv, cwd: process.env.HOME ?? '/' });
    return {
      write: (data) => session.write(data),
      onData: (listener) => session.output.on('data', listener),
      pause: () => session.output.pause(),
      resume: () => session.output.resume(),
      end: () => session.stop(),
    };
  }
  const command =
    kind === 'systemd-run'
      ? ['systemd-run', '--pty', '--wait', '--quiet', `--uid=${account.user}`, `--gid=${account.gid}`, `--working-directory=${account.cwd}`, '--', ...argv]
      : ['script', '-qc', argv.map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`).join(' '), '/dev/null'];
  const asClient = kind === 'script' ? { uid: account.uid, gid: account.gid, cwd: account.cwd } : {};
  const child = spawn(command[0]!, command.slice(1), { stdio: ['pipe', 'pipe', 'ignore'], ...asClient, env: { ...process.env, HOME: account.cwd ?? '/' } });
  const closed = new Promise((resolve) => child.on('close', resolve));
  return {
    write: (data) => child.stdin!.write(data),
    onData: (listener) => child.stdout!.on('data', listener),
    pause: () => child.stdout!.pause(),
    resume: () => child.stdout!.resume(),
    end: () => {
      child.kill('SIGTERM');
      return closed;
    },
  };
}

// One data listener per terminal fans out to whoever waits (one terminal at a time: commands are serial).
let listeners = new Set<(chunk: Buffer) => void>();

/** Resolves with the time output containing `marker` arrived. */
function waitFor(marker: string, timeoutMs = 10_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const seen = markerWatch(marker);
    const timer = setTimeout(() => reject(new Error(`no ${JSON.stringify(marker)} within ${timeoutMs} ms`)), timeoutMs);
    const listener = (chunk: Buffer) => {
      if (!seen(chunk)) return;
      clearTimeout(timer);
      listeners.delete(listener);
      resolve(now());
    };
    listeners.add(listener);
  });
}

/**
 * Fans the terminal's output out to the current listeners. With `bytesPerSecond`, reading plays a
 * screen that draws at that rate: after each chunk the stream pauses for as long as drawing it takes,
 * so bytes queue inside the pipeline under test as they would in front of a real terminal.
 */
function attach(terminal: Terminal, bytesPerSecond = 0): void {
  listeners = new Set();
  const mine = listeners;
  let busyUntil = 0;
  terminal.onData((chunk) => {
    for (const listener of [...mine]) listener(chunk);
    if (!bytesPerSecond) return;
    busyUntil = Math.max(busyUntil, now()) + (chunk.length * 1000) / bytesPerSecond;
    const wait = busyUntil - now();
    if (wait < 1) return;
    terminal.pause();
    setTimeout(() => terminal.resume(), wait);
  });
}

/** Keystroke echo: `count` single bytes into `cat` in canonical mode, each timed until its echo. */
async function echo(kind: string, count: number, account: Record<string, any>): Promise<number[]> {
  const terminal = await openTerminal(kind, ['sh', '-c', 'stty -echoctl; echo READY; exec cat'], account);
  attach(terminal);
  await waitFor('READY');
  const latencies: number[] = [];
  let pending: (() => void) | undefined;
  listeners.add(() => pending?.());
  for (let i = 0; i < count; i += 1) {
    // A newline every 1000 bytes keeps the line below the canonical buffer's 4095.
    const byte = i % 1000 === 999 ? '\n' : 'a';
    const t0 = now();
    await new Promise<void>((resolve) => {
      pending = () => {
        pending = undefined;
        resolve();
      };
      terminal.write(byte);
    });
    latencies.push(now() - t0);
  }
  await terminal.end();
  return latencies;
}

/** ^C while `yes` floods the screen: from the 0x03 byte until the shell's prompt returns. */
async function interrupt(kind: string, floodBytes: number, account: Record<string, any>, screenRate: number): Promise<{ ms: number; flooded: number }> {
  const terminal = await openTerminal(kind, ['bash', '--norc', '--noprofile', '-i'], account);
  attach(terminal, screenRate);
  let bytes = 0;
  listeners.add((chunk) => (bytes += chunk.length));
  // Typed only once bash shows its first prompt (bash --norc: "bash-5.2# " or "$ "): readline may drop earlier input.
  await waitFor('bash-', 10_000);
  // The prompt is written as two quoted halves so the echoed command line never contains it.
  terminal.write("PS1='@@''P@@'; echo RE''ADY; yes\n");
  await waitFor('READY');
  const start = bytes;
  await new Promise<void>((resolve) => {
    const check = () => (bytes - start >= floodBytes ? (listeners.delete(check), resolve()) : undefined);
    listeners.add(check);
  });
  const prompt = waitFor('@@P@@', 20_000);
  const t0 = now();
  terminal.write('\x03');
  const ms = (await prompt) - t0;
  terminal.write('exit\n');
  await terminal.end();
  return { ms, flooded: bytes - start };
}

/** Starts `true` again and again for `ms`, one at a time, as the agent; every start timed. */
async function startLoop(ms: number): Promise<{ exits: number[]; errors: string[]; brokerCpu: number | undefined }> {
  const until = now() + ms;
  const exits: number[] = [];
  const errors: string[] = [];
  const brokerBefore = brokerPid ? cpuMs(brokerPid) : undefined;
  while (now() < until) {
    try {
      exits.push((await libraryRun(['true'])).exit);
    } catch (error) {
      errors.push((error as { code?: string }).code ?? String(error));
    }
  }
  const brokerAfter = brokerPid ? cpuMs(brokerPid) : undefined;
  // The broker's share of one core over the loop (its own process: workers are children, not counted).
  const brokerCpu = brokerBefore === undefined || brokerAfter === undefined ? undefined : (brokerAfter - brokerBefore) / ms;
  return { exits, errors, brokerCpu };
}

async function handle(command: Command): Promise<unknown> {
  switch (command.op) {
    case 'broker':
      brokerPid = command.pid;
      return {};
    case 'library':
      return libraryRun(command.argv, { expect: command.expect, cpu: command.cpu, hold: command.hold, start: command.start });
    case 'spawn':
      return spawnRun(command.argv, { uid: command.uid, gid: command.gid, cwd: command.cwd, expect: command.expect, env: command.env });
    case 'echo':
      return echo(command.kind, command.count, command.account ?? {});
    case 'interrupt':
      return interrupt(command.kind, command.floodBytes, command.account ?? {}, command.screenRate ?? 0);
    case 'startLoop':
      return startLoop(command.ms);
    case 'holdAnchor': {
      const a = command.account;
      const child = spawn('systemd-run', ['--pty', '--wait', '--quiet', `--uid=${a.user}`, `--gid=${a.gid}`, '--', 'sleep', '3600'], { stdio: ['pipe', 'pipe', 'ignore'] });
      child.stdout!.resume();
      heldChildren.push(child);
      return { pid: child.pid };
    }
    case 'release': {
      const stops = held.splice(0).map((session) => session.stop().catch(() => undefined));
      for (const child of heldChildren.splice(0)) child.kill('SIGTERM');
      await Promise.all(stops);
      return { released: stops.length };
    }
    case 'memory': {
      const procs = brokerProcesses(command.brokerPid, command.sessions);
      return {
        broker: memory(procs.broker),
        spare: procs.spare === undefined ? undefined : memory(procs.spare),
        workers: procs.workers.map(memory),
        helpers: (command.helpers as number[]).map(memory),
        anchors: (command.anchors as number[]).map(memory),
      };
    }
    default: {
      // The attach section's commands (probe-attach.ts).
      const answer = await attachOp(command, supervisorSocket!);
      if (answer === undefined) throw new Error(`unknown op ${command.op}`);
      return answer;
    }
  }
}

async function flood(socketPath: string, ms: number, concurrency: number): Promise<void> {
  const until = now() + ms;
  const hello = Buffer.from('01000000084f43505400010001', 'hex');
  let connections = 0;
  let answered = 0;
  // A flood the kernel turns away (EACCES without the socket's group) measures nothing: counted.
  const errors: Record<string, number> = {};
  const one = () =>
    new Promise<void>((resolve) => {
      const socket = net.createConnection(socketPath);
      connections += 1;
      socket.on('connect', () => socket.write(hello));
      socket.once('data', () => {
        answered += 1;
        socket.destroy();
      });
      socket.on('error', (error: NodeJS.ErrnoException) => {
        const code = error.code ?? 'error';
        errors[code] = (errors[code] ?? 0) + 1;
      });
      socket.on('close', () => resolve());
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (now() < until) await one();
    }),
  );
  const cpu = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ connections, answered, errors, cpuMs: Math.round((cpu.user + cpu.system) / 1000) })}\n`);
}

if (mode === 'flood') {
  await flood(listenPath!, Number(supervisorSocket), Number(rest[0] ?? 16));
} else {
  rmSync(listenPath!, { force: true });
  net
    .createServer({ allowHalfOpen: true }, (connection) => {
      let text = '';
      connection.on('data', (chunk) => {
        text += chunk;
        if (!text.endsWith('\n')) return;
        handle(JSON.parse(text) as Command).then(
          (answer) => connection.end(`${JSON.stringify({ ok: true, answer })}\n`),
          (error: Error) => connection.end(`${JSON.stringify({ ok: false, error: (error as { code?: string }).code ?? error.message })}\n`),
        );
      });
      connection.on('error', () => undefined);
    })
    .listen(listenPath, () => process.stdout.write('listening\n'));
}
