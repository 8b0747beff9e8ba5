// The torture driver, run inside the sandbox as the agent service's main process (bundled beside the
// addon). It takes one JSON command per connection on a Unix socket and answers one JSON line:
//   {"sessions": {count, argv}}          count sessions at once from this process (the real MainPID)
//   {"raw": RawCase}                     one hostile connection (see rawCase); reports what came back
//   {"raws": RawCase[]}                  many, one after another
//   {"run": argv, "background": bool}    a child process (inside the agent's cgroup)
//   {"release": true}                    ends background children
// As `node torture-driver.js once JSON` it runs one command and prints the answer (a child's view).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import { finished } from 'node:stream/promises';
import { connect } from '../../src/client/index.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { FrameDecoder, encodeFrame, type Frame } from '../../src/protocol/index.ts';

const HELLO = Buffer.from('01000000084f43505400010001', 'hex');
const SOCKET = process.env.TORTURE_SOCKET ?? '/run/opencode-pty/supervisor.sock';

export interface SessionResult {
  ok: boolean;
  ms: number;
  exit?: { code: number; status: number; result: string };
  error?: string;
  output?: string;
}

async function oneSession(argv: string[], cwd: string): Promise<SessionResult> {
  const started = performance.now();
  try {
    const client = await connect(SOCKET, { signal: AbortSignal.timeout(30_000) });
    const session = await client.start({ argv, cwd, signal: AbortSignal.timeout(30_000) });
    const startMs = performance.now() - started;
    let output = '';
    session.output.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // The output stream ends after EXIT with everything delivered; EXIT alone may come first.
    const ended = finished(session.output).catch(() => undefined);
    const exit = await session.exit;
    await ended;
    return { ok: true, ms: startMs, exit, output };
  } catch (error) {
    return { ok: false, ms: performance.now() - started, error: `${(error as { code?: string }).code ?? ''}: ${(error as Error).message}` };
  }
}

/** What one hostile connection does, in order: HELLO (or raw bytes instead), START with chosen fds, more bytes. */
export interface RawCase {
  /** Bytes sent instead of HELLO (hex); HELLO when absent. */
  first?: string;
  /** A well-formed START for `cwd` is sent after WELCOME, carrying these fds. */
  start?: { fds: FdKind[]; mutate?: string };
  /** Bytes after START (or after WELCOME when no START), hex, each its own write. */
  then?: string[];
  /** An fd attached to the first of `then`. */
  fdOnThen?: FdKind;
  /** Stop after this many ms without an answer (default 8000). */
  waitMs?: number;
}

export type FdKind = 'cwd' | 'file' | 'pipe' | 'socket' | 'opath' | 'otherdir' | 'none';

export interface RawResult {
  frames: string[];
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
    case 'pipe':
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
  const fd = native().connectUnix(SOCKET);
  const socket = new FdSocket(fd);
  socket.on('error', () => undefined);
  const decoder = new FrameDecoder('to-client');
  const result: RawResult = { frames: [], closed: false };
  let welcomed: () => void = () => undefined;
  const welcome = new Promise<void>((resolve) => (welcomed = resolve));
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
        if (frame.type === 'welcome') welcomed();
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
  send(spec.first ? Buffer.from(spec.first, 'hex') : HELLO);
  if (spec.start || spec.then) await Promise.race([welcome, done]);
  if (spec.start && !result.closed) {
    const stat = statSync(cwd, { bigint: true });
    const start = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['sh', '-c', 'exec cat'], env: [] });
    if (spec.start.mutate) Buffer.from(spec.start.mutate, 'hex').copy(start, 0);
    send(start, spec.start.fds.flatMap((kind) => openFd(kind, cwd)));
  }
  for (const [i, hex] of (spec.then ?? []).entries()) {
    if (result.closed) break;
    send(Buffer.from(hex, 'hex'), i === 0 && spec.fdOnThen ? openFd(spec.fdOnThen, cwd) : []);
  }
  await done;
  socket.close();
  return result;
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {}
}

const children = new Set<ChildProcess>();

function run(argv: string[], background: boolean): Promise<unknown> {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
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
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

export async function command(text: string, cwd: string): Promise<unknown> {
  const order = JSON.parse(text);
  if (order.sessions) {
    const { count, argv } = order.sessions as { count: number; argv: string[] };
    return { results: await Promise.all(Array.from({ length: count }, () => oneSession(argv, cwd))) };
  }
  if (order.raw) return rawCase(order.raw as RawCase, cwd);
  if (order.raws) {
    const results: RawResult[] = [];
    for (const spec of order.raws as RawCase[]) results.push(await rawCase(spec, cwd));
    return { results };
  }
  if (order.release) {
    for (const child of children) child.kill('SIGKILL');
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
