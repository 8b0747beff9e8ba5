// The agent stand-in, run inside the sandbox as the agent service's main process (bundled beside the
// addon by support/agent.ts), so what it does comes from inside the service's cgroup: in-process (the
// peer is the real MainPID) or from child processes (the same cgroup, not the MainPID). It takes one
// JSON command per connection on a Unix socket and answers one JSON line ({"failed": why} on failure):
//   {"sessions": {count, argv}}          count sessions at once from this process
//   {"peers": {count, mode, hold}}       test peers (support/peer.mjs) from this process; held ones stay open until release
//   {"raw": RawCase}                     one hostile connection (see rawCase); reports what came back
//   {"raws": RawCase[]}                  many, one after another
//   {"run": argv, "background": bool}    a child process (inside the agent's cgroup)
//   {"withholdCredit": {ms, count}}      no credit for ms while `seq 1 count` writes, then read it all
//   {"stopReading": {ms, grant}}         credit granted, then the socket not read for ms while `yes` writes
//   {"keep": KeepOrder}                 kept sessions through the client library (agent-keep.ts)
//   {"release": true}                    closes held peers, ends background children (SIGTERM)
// As `node AGENT once JSON` it runs one command and prints the answer (a child's view).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { finished } from 'node:stream/promises';
import { connect, type StartOptions } from '../../src/client/index.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { FrameDecoder, encodeFrame, type Frame } from '../../src/protocol/index.ts';
import { runPeers } from './peer.mjs';
import { keepCommand, type KeepOrder } from './agent-keep.ts';

const HELLO = Buffer.from('01000000084f43505400010001', 'hex');
const SESSION_LIMIT_MS = Number(process.env.TORTURE_SESSION_LIMIT_MS ?? 60_000);
const SOCKET = process.env.TORTURE_SOCKET ?? '/run/opencode-pty/supervisor.sock';

export interface SessionResult {
  ok: boolean;
  ms: number;
  exit?: { reason: string; code: number; status: number; result: string };
  error?: string;
  output?: string;
}

/** Version 4's START fields a `sessions` order may add (client StartOptions). */
export type SandboxOptions = Pick<StartOptions, 'profile' | 'network' | 'budgets'>;

async function oneSession(argv: string[], cwd: string, options: SandboxOptions = {}): Promise<SessionResult> {
  const started = performance.now();
  try {
    const client = await connect(SOCKET, { signal: AbortSignal.timeout(30_000) });
    const session = await client.start({ argv, cwd, ...options, signal: AbortSignal.timeout(30_000) });
    const startMs = performance.now() - started;
    let output = '';
    session.output.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // The output stream ends after EXIT with everything delivered; EXIT alone may come first.
    const ended = finished(session.output).catch(() => undefined);
    // No case may hang the run: a session still going after this long is reported as such.
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(`no end within ${SESSION_LIMIT_MS} ms; output so far ${JSON.stringify(output.slice(-200))}`), { code: 'STUCK' })), SESSION_LIMIT_MS);
    });
    try {
      // How it ended, without version 2's end record (its figures differ run to run).
      const { reason, code, status, result } = await Promise.race([session.exit, stuck]);
      await Promise.race([ended, stuck]);
      return { ok: true, ms: startMs, exit: { reason, code, status, result }, output };
    } finally {
      clearTimeout(timer);
    }
  } catch (error) {
    return { ok: false, ms: performance.now() - started, error: `${(error as { code?: string }).code ?? ''}: ${(error as Error).message}` };
  }
}

/** What one hostile connection does, in order: HELLO (or raw bytes instead), START with chosen fds, more bytes. */
export interface RawCase {
  /** Bytes sent instead of HELLO (hex); HELLO when absent. */
  first?: string;
  /** An fd attached to the first bytes. */
  fdOnFirst?: FdKind;
  /** Send nothing at all (a silent peer). */
  silent?: boolean;
  /** Send `first` (or HELLO) one byte every this many ms (slowloris). */
  dripMs?: number;
  /** Another path to the supervisor's socket (from inside a session unit, where the usual one is hidden). */
  socket?: string;
  /** Wait for STARTED before sending `then` (data-phase cases). */
  afterStarted?: boolean;
  /** Shut the writing side down after the last bytes (so a truncated frame ends in EOF, not a timeout). */
  halfClose?: boolean;
  /** A well-formed START for `cwd` is sent after WELCOME, carrying these fds. */
  start?: { fds: FdKind[]; mutateAt?: number; mutateTo?: number };
  /** Bytes after START (or after WELCOME when no START), hex, each its own write. */
  then?: string[];
  /** An fd attached to the first of `then`. */
  fdOnThen?: FdKind;
  /** Stop after this many ms without an answer (default 8000). */
  waitMs?: number;
  /** Stop at STARTED: a START that may still be valid (a byte set to its own value) starts a
   * session that never ends by itself; under load its STARTED can take seconds, so a fixed short
   * wait read a slow start as a server that closed without answering. */
  untilStarted?: boolean;
  /** Stop once a frame of this type came (e.g. "attached": a request answered as it should be, held
   * no longer than that). */
  untilFrame?: string;
  /** Version 3: bytes sent (hex, each its own write) once ATTACHED came, e.g. an observer's INPUT. */
  thenAfterAttached?: string[];
}

export type FdKind = 'cwd' | 'file' | 'pipe' | 'socket' | 'opath' | 'opathfile' | 'otherdir' | 'none';

export interface RawResult {
  frames: string[];
  /** A send with descriptors failed with EPERM: the server's socket takes none (SO_PASSRIGHTS, Linux 6.16). */
  sendRefused?: boolean;
  code?: number;
  message?: string;
  closed: boolean;
}

function openFd(kind: FdKind, cwd: string): number[] {
  switch (kind) {
    case 'cwd':
      return [openSync(cwd, 'r')];
    case 'otherdir':
      return [openSync('/tmp', 'r')];
    case 'file':
      return [openSync('/etc/hostname', 'r')];
    case 'opath':
      // O_PATH (010000000): a reference without read access.
      return [openSync(cwd, 0o10000000)];
    case 'opathfile':
      return [openSync('/etc/hostname', 0o10000000)];
    case 'pipe': {
      const [readEnd, writeEnd] = pipeFds();
      closeSync(writeEnd);
      return [readEnd];
    }
    case 'socket': {
      const [a, b] = native().socketpair();
      closeSync(b);
      return [a];
    }
    case 'none':
      return [];
  }
}

function describe(frame: Frame): string {
  return frame.type === 'error' ? `error:${frame.code}` : frame.type;
}

async function rawCase(spec: RawCase, cwd: string): Promise<RawResult> {
  const fd = native().connectUnix(spec.socket ?? SOCKET);
  const socket = new FdSocket(fd);
  const decoder = new FrameDecoder('to-client');
  const result: RawResult = { frames: [], closed: false };
  // EPERM: the kernel refused a descriptor (SO_PASSRIGHTS off on the server's socket).
  socket.on('error', (error: { errno?: string }) => {
    if (error.errno === 'EPERM') result.sendRefused = true;
  });
  let welcomed: () => void = () => undefined;
  const welcome = new Promise<void>((resolve) => (welcomed = resolve));
  let startedSeen: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (startedSeen = resolve));
  let attachedSeen: () => void = () => undefined;
  const attached = new Promise<void>((resolve) => (attachedSeen = resolve));
  let wantedSeen: () => void = () => undefined;
  const wanted = new Promise<void>((resolve) => (wantedSeen = resolve));
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, spec.waitMs ?? 8000);
    const finish = () => {
      clearTimeout(timer);
      result.closed = true;
      resolve();
    };
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('hangup', finish);
    socket.startReading((chunk) => {
      let frames: Frame[];
      try {
        frames = decoder.push(chunk);
      } catch {
        result.frames.push('malformed');
        return;
      }
      for (const frame of frames) {
        result.frames.push(describe(frame));
        if (frame.type === 'error') {
          result.code = frame.code;
          result.message = frame.message;
        }
        if (frame.type === 'welcome') {
          // The frames after WELCOME follow the version it chose (version 3's SESSIONS, ATTACHED…).
          decoder.version = frame.version;
          welcomed();
        }
        if (frame.type === 'started') startedSeen();
        if (frame.type === 'attached') attachedSeen();
        if (frame.type === spec.untilFrame) wantedSeen();
      }
    });
  });
  const send = (data: Buffer, fds: number[] = []) => {
    try {
      socket.write(data, fds);
    } catch {
      // The server may already have closed: what it answered is the result.
    } finally {
      for (const f of fds) closeQuietly(f);
    }
  };
  if (spec.dripMs) {
    // An empty `first` (HELLO cut at 0) is nothing at all, not the default HELLO.
    const bytes = spec.first !== undefined ? Buffer.from(spec.first, 'hex') : HELLO;
    for (let i = 0; i < bytes.length && !result.closed; i += 1) {
      send(bytes.subarray(i, i + 1));
      await Promise.race([new Promise((resolve) => setTimeout(resolve, spec.dripMs)), done]);
    }
  } else if (!spec.silent) send(spec.first !== undefined ? Buffer.from(spec.first, 'hex') : HELLO, spec.fdOnFirst ? openFd(spec.fdOnFirst, cwd) : []);
  if (spec.start || spec.then) await Promise.race([welcome, done]);
  if (spec.start && !result.closed) {
    const stat = statSync(cwd, { bigint: true });
    const start = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['sh', '-c', 'exec cat'], env: [] });
    if (spec.start.mutateAt !== undefined && spec.start.mutateAt < start.length) start[spec.start.mutateAt] = spec.start.mutateTo ?? 0;
    send(start, spec.start.fds.flatMap((kind) => openFd(kind, cwd)));
    if (spec.untilStarted) {
      await Promise.race([started, done]);
      socket.close();
      return result;
    }
  }
  if (spec.afterStarted) await Promise.race([started, done]);
  for (const [i, hex] of (spec.then ?? []).entries()) {
    if (result.closed) break;
    send(Buffer.from(hex, 'hex'), i === 0 && spec.fdOnThen ? openFd(spec.fdOnThen, cwd) : []);
  }
  if (spec.thenAfterAttached) {
    await Promise.race([attached, done]);
    for (const hex of spec.thenAfterAttached) if (!result.closed) send(Buffer.from(hex, 'hex'));
  }
  if (spec.untilFrame) {
    await Promise.race([wanted, done]);
    socket.close();
    return result;
  }
  if (spec.halfClose && !result.closed) {
    // Let queued bytes reach the kernel first.
    while (!socket.closed && socket.writableLength > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    try {
      socket.shutdown('write');
    } catch {}
  }
  await done;
  socket.close();
  return result;
}

/** What the client saw of a session whose credit or reading it held back. */
export interface HeldResult {
  ok: boolean;
  /** OUTPUT bytes received, and whether they were exactly what the program wrote. */
  bytes: number;
  intact?: boolean;
  exit?: { code: number; status: number; result: string };
  /** Frames after STARTED, runs of OUTPUT counted as one entry (e.g. ["output×31", "error:9"]). */
  frames?: string[];
  /** When the client resumed (Date.now(), the host's clock too). */
  resumedAt: number;
  error?: string;
}

/**
 * The client grants no credit for `ms` while the program writes `seq 1 count` (the library grants
 * credit only as its output stream is read: nothing reads it), then reads everything: nothing may
 * be lost, and EXIT must come after the last line.
 */
async function withholdCredit(spec: { ms: number; count: number }, cwd: string): Promise<HeldResult> {
  let resumedAt = 0;
  try {
    const client = await connect(SOCKET, { signal: AbortSignal.timeout(30_000) });
    const session = await client.start({ argv: ['seq', '1', String(spec.count)], cwd, signal: AbortSignal.timeout(30_000) });
    await new Promise((resolve) => setTimeout(resolve, spec.ms));
    resumedAt = Date.now();
    const chunks: Buffer[] = [];
    session.output.on('data', (chunk: Buffer) => chunks.push(chunk));
    const ended = finished(session.output).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(`no end within ${SESSION_LIMIT_MS} ms of the credit's return`), { code: 'STUCK' })), SESSION_LIMIT_MS);
    });
    const exit = await Promise.race([session.exit, stuck]).finally(() => clearTimeout(timer));
    await ended;
    const output = Buffer.concat(chunks).toString();
    // The terminal turns each \n into \r\n (ONLCR).
    let expected = '';
    for (let i = 1; i <= spec.count; i += 1) expected += `${i}\r\n`;
    return { ok: true, bytes: output.length, intact: output === expected, exit, resumedAt };
  } catch (error) {
    return { ok: false, bytes: 0, resumedAt, error: `${(error as { code?: string }).code ?? ''}: ${(error as Error).message}` };
  }
}

/**
 * The client grants `grant` bytes of credit beyond the first window, then stops reading its socket
 * for `ms` while `yes` writes; then reads what the kernel queued. docs/protocol.md: the session ends
 * with ERROR FLOW after writeTimeoutMs, the output already queued comes first, and nothing follows.
 */
async function stopReading(spec: { ms: number; grant: number }, cwd: string): Promise<HeldResult> {
  const socket = new FdSocket(native().connectUnix(SOCKET));
  socket.on('error', () => undefined);
  const decoder = new FrameDecoder('to-client');
  const frames: string[] = [];
  let bytes = 0;
  let started: () => void = () => undefined;
  const startedSeen = new Promise<void>((resolve) => (started = resolve));
  let welcomed: () => void = () => undefined;
  const welcome = new Promise<void>((resolve) => (welcomed = resolve));
  let resumedAt = 0;
  const closed = new Promise<void>((resolve) => {
    socket.on('end', resolve);
    socket.on('close', resolve);
  });
  socket.startReading((chunk) => {
    for (const frame of decoder.push(chunk)) {
      if (frame.type === 'welcome') welcomed();
      else if (frame.type === 'started') started();
      else if (frame.type === 'output') {
        bytes += frame.data.length;
        if (frames.at(-1)?.startsWith('output')) frames[frames.length - 1] = `output×${Number(frames.at(-1)!.split('×')[1]) + 1}`;
        else frames.push('output×1');
      } else frames.push(describe(frame));
    }
  });
  try {
    socket.write(HELLO);
    await Promise.race([welcome, closed]);
    const stat = statSync(cwd, { bigint: true });
    const fds = openFd('cwd', cwd);
    socket.write(encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['yes'], env: [] }), fds);
    for (const fd of fds) closeQuietly(fd);
    await Promise.race([startedSeen, closed]);
    socket.write(encodeFrame({ type: 'credit', bytes: spec.grant }));
    socket.pauseReading();
    await new Promise((resolve) => setTimeout(resolve, spec.ms));
    resumedAt = Date.now();
    socket.resumeReading();
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 30_000))]);
    return { ok: true, bytes, frames, resumedAt };
  } catch (error) {
    return { ok: false, bytes, frames, resumedAt, error: `${(error as { code?: string }).code ?? ''}: ${(error as Error).message}` };
  } finally {
    socket.close();
  }
}

/** A real pipe: Node has no pipe(2), but both ends of a FIFO are one. */
function pipeFds(): [number, number] {
  const path = `${process.cwd()}/.torture-fifo-${process.pid}-${Math.random().toString(16).slice(2)}`;
  spawnSyncMkfifo(path);
  const readEnd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeEnd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  rmSync(path);
  return [readEnd, writeEnd];
}

function spawnSyncMkfifo(path: string): void {
  const result = spawnSync('mkfifo', [path]);
  if (result.status !== 0) throw new Error(`mkfifo: ${result.stderr}`);
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {}
}

const children = new Set<ChildProcess>();

/** Connections of `peers` commands with `hold`, open until release. */
const held: net.Socket[] = [];

function run(argv: string[], background: boolean): Promise<unknown> {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  // A failed spawn is an answer, never an uncaught 'error' that ends the agent (the test would then
  // see ECONNREFUSED on the agent's socket and nothing of why).
  const failed = new Promise((resolve) => child.on('error', (error) => resolve({ code: null, error: error.message, stdout: '', stderr: '' })));
  if (background) {
    children.add(child);
    child.on('exit', () => children.delete(child));
    child.stdout!.resume();
    child.stderr!.resume();
    return Promise.resolve({ pid: child.pid });
  }
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return Promise.race([failed, new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })))]);
}

/**
 * Keeps `concurrency` connections open for `durationMs`, each re-opened as soon as the server closes
 * it; counts what the server answered. mode "silent" sends nothing, "hello" sends HELLO.
 */
/**
 * A connection flood: `concurrency` lanes, each connecting again once its connection is answered.
 * 'silent' and 'hello' wait for the broker's answer (so the tarpit paces them); 'reconnect' sends
 * HELLO and connects again at its first answer or error with no pause (the bench's flooder);
 * 'burst' connects and closes at once, never waiting for an answer, so the accept queue fills as
 * fast as the process can call connect(2) (a pause of 1 ms on EAGAIN, the queue full).
 */
async function flood(spec: { concurrency: number; durationMs: number; mode: 'silent' | 'hello' | 'reconnect' | 'burst'; socket?: string }): Promise<{ opened: number; answers: Record<string, number> }> {
  const until = Date.now() + spec.durationMs;
  const answers: Record<string, number> = {};
  let opened = 0;
  if (spec.mode === 'burst') return burst(spec.socket ?? SOCKET, until, spec.concurrency);
  if (spec.mode === 'reconnect') return reconnect(spec.socket ?? SOCKET, until, spec.concurrency);
  const lane = async () => {
    while (Date.now() < until) {
      opened += 1;
      let answer: string;
      try {
        const result = await rawCase({ silent: spec.mode === 'silent', socket: spec.socket, waitMs: Math.max(1, until - Date.now()) }, process.cwd());
        answer = result.code !== undefined ? `error:${result.code}` : result.closed ? 'closed' : 'held';
      } catch (error) {
        answer = (error as { code?: string }).code ?? 'failed';
        // EAGAIN: the backlog is full; give the broker a moment.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      answers[answer] = (answers[answer] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, lane));
  return { opened, answers };
}

/** Connects and closes in a tight loop until `until`; `batch` connections per turn of the event loop. */
async function burst(path: string, until: number, batch: number): Promise<{ opened: number; answers: Record<string, number> }> {
  const answers: Record<string, number> = {};
  let opened = 0;
  while (Date.now() < until) {
    let full = false;
    for (let i = 0; i < batch; i += 1) {
      opened += 1;
      try {
        closeSync(native().connectUnix(path));
        answers.connected = (answers.connected ?? 0) + 1;
      } catch (error) {
        const code = (error as { code?: string }).code ?? 'failed';
        answers[code] = (answers[code] ?? 0) + 1;
        full ||= code === 'EAGAIN';
      }
    }
    await new Promise((resolve) => setTimeout(resolve, full ? 1 : 0));
  }
  // The flood's own CPU, to set the broker's beside it.
  const cpu = process.cpuUsage();
  answers.cpuMs = Math.round((cpu.user + cpu.system) / 1000);
  return { opened, answers };
}

/** HELLO, then a new connection at the first answer or error (bench/probe.ts's flooder). */
async function reconnect(path: string, until: number, concurrency: number): Promise<{ opened: number; answers: Record<string, number> }> {
  const answers: Record<string, number> = {};
  let opened = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const socket = net.createConnection(path);
      opened += 1;
      socket.on('connect', () => socket.write(HELLO));
      socket.once('data', () => {
        answers.answered = (answers.answered ?? 0) + 1;
        socket.destroy();
      });
      socket.on('error', (error: NodeJS.ErrnoException) => {
        const code = error.code ?? 'error';
        answers[code] = (answers[code] ?? 0) + 1;
      });
      socket.on('close', () => resolve());
    });
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < until) await one();
  }));
  return { opened, answers };
}

/** Sessions one after another for `durationMs` (or `count` of them): each one's start time and end. */
/** Sessions one after another; `paceMs`: each starts at least that long after the one before began. */
async function sequential(spec: { durationMs?: number; count?: number; paceMs?: number; argv: string[] }, cwd: string): Promise<{ results: SessionResult[] }> {
  const results: SessionResult[] = [];
  const until = Date.now() + (spec.durationMs ?? Number.POSITIVE_INFINITY);
  while (Date.now() < until && results.length < (spec.count ?? Number.POSITIVE_INFINITY)) {
    const began = Date.now();
    const result = await oneSession(spec.argv, cwd);
    const rest = (spec.paceMs ?? 0) - (Date.now() - began);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
    // Outputs are dropped from long runs: only whether each matched is kept.
    results.push({ ok: result.ok, ms: result.ms, exit: result.exit, error: result.error, output: result.output });
  }
  return { results };
}

export async function command(text: string, cwd: string): Promise<unknown> {
  const order = JSON.parse(text);
  if (order.flood) return flood(order.flood);
  if (order.withholdCredit) return withholdCredit(order.withholdCredit, cwd);
  if (order.stopReading) return stopReading(order.stopReading, cwd);
  if (order.sequential) return sequential(order.sequential, cwd);
  if (order.connectAndExit) {
    // Connect, send HELLO, and exit at once: the broker finds a peer whose process is gone.
    const fd = native().connectUnix(SOCKET);
    native().sendmsg(fd, HELLO, 0, HELLO.length);
    process.exit(0);
  }
  if (order.sessions) {
    const { count, argv, options } = order.sessions as { count: number; argv: string[]; options?: SandboxOptions };
    return { results: await Promise.all(Array.from({ length: count }, () => oneSession(argv, cwd, options))) };
  }
  if (order.keep) return keepCommand(order.keep as KeepOrder, cwd);
  if (order.raw) return rawCase(order.raw as RawCase, cwd);
  if (order.raws) {
    const results: RawResult[] = [];
    for (const spec of order.raws as RawCase[]) results.push(await rawCase(spec, cwd));
    return { results };
  }
  if (order.peers) {
    const { count, mode, hold } = order.peers as { count: number; mode: string; hold?: boolean };
    return { reports: await runPeers(SOCKET, count, mode, Boolean(hold), held) };
  }
  if (order.release) {
    for (const socket of held.splice(0)) socket.destroy();
    for (const child of children) child.kill('SIGTERM');
    return { released: true };
  }
  if (order.status) return { pid: process.pid, fds: readFileSync('/proc/self/status', 'utf8').length };
  return run(order.run as string[], Boolean(order.background));
}

const [mode, arg, cwdArg] = process.argv.slice(2);
if (mode === 'once') {
  const answer = await command(arg!, cwdArg ?? process.cwd());
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  process.exit(0);
} else if (mode === 'serve') {
  const cwd = cwdArg ?? process.cwd();
  rmSync(arg!, { force: true });
  rmSync(`${arg}.new`, { force: true });
  net
    .createServer({ allowHalfOpen: true }, (connection) => {
      let text = '';
      connection.on('error', (error) => console.error(`agent: control connection: ${error.message}`));
      connection.on('data', async (chunk) => {
        text += chunk;
        if (!text.includes('\n')) return;
        let answer: unknown;
        try {
          answer = await command(text, cwd);
        } catch (error) {
          answer = { failed: String((error as Error).stack ?? error) };
        }
        connection.end(`${JSON.stringify(answer)}\n`);
      });
    })
    // Listening before the name appears: the harness connects as soon as it sees the file.
    .listen(`${arg}.new`, () => renameSync(`${arg}.new`, arg!));
}
