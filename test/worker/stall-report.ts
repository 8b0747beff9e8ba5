// A wait in a worker test that outlives a generous bound fails with what everyone held at that
// moment, rather than hanging until the runner's per-file timeout kills it without a word: the
// descriptors of this process and the worker, which Unix sockets they are and who holds their peers
// (a peer held by no process is in flight in some socket's queue), the worker's libuv handles and
// timers (Node's diagnostic report) and its log.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';

/** How long one wait may take before it counts as a hang; a whole test file has 300 s (test/run.mjs). */
export const WAIT_BOUND_MS = Number(process.env.TEST_WAIT_BOUND_MS || 120_000);

/** Thrown at the bound; its message carries the report. */
export class StallError extends Error {}

/**
 * `wait`, or at WAIT_BOUND_MS a StallError saying what was waited for and what `report` saw then.
 * The report runs only on a stall.
 */
export async function bounded<T>(what: string, wait: Promise<T>, report: () => Promise<string>, boundMs = WAIT_BOUND_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), boundMs)));
  try {
    const first = await Promise.race([wait, stalled]);
    if (first !== 'stalled') return first as T;
  } finally {
    clearTimeout(timer);
  }
  let details: string;
  try {
    details = await report();
  } catch (error) {
    details = `(the report failed: ${(error as Error).message})`;
  }
  throw new StallError(`${what}: nothing within ${boundMs} ms\n${details}`);
}

/** fd number → link target ("socket:[123]", a path…) of a live process. */
export function fdTable(pid: number): Map<number, string> {
  const table = new Map<number, string>();
  let names: string[];
  try {
    names = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return table;
  }
  for (const name of names) {
    try {
      table.set(Number(name), readlinkSync(`/proc/${pid}/fd/${name}`));
    } catch {
      // Closed meanwhile.
    }
  }
  return table;
}

function socketInodes(table: Map<number, string>): Set<string> {
  return new Set([...table.values()].flatMap((target) => /^socket:\[(\d+)\]$/.exec(target)?.slice(1) ?? []));
}

/**
 * `ss -xp` lines of the sockets these processes hold and of their peers. A Unix line is
 * "Netid State Recv-Q Send-Q Local Port Peer Port [users:(…)]", Port being the inode: a peer line
 * without users is a socket no process holds (in flight in some queue, or its holder just exited).
 */
export function unixSockets(pids: number[]): string {
  const inodes = new Set<string>();
  for (const pid of pids) for (const inode of socketInodes(fdTable(pid))) inodes.add(inode);
  let ss: string;
  try {
    ss = execFileSync('ss', ['-xapn'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    return `(ss failed: ${(error as Error).message})`;
  }
  const lines = ss.split('\n');
  const ports = (line: string) => line.trim().split(/\s+/).filter((_, index) => index === 5 || index === 7);
  const ours = lines.filter((line) => ports(line).some((port) => inodes.has(port)));
  // Their peers too, wherever they are.
  const peers = new Set(ours.flatMap((line) => ports(line)));
  return lines.filter((line, index) => index === 0 || ports(line).some((port) => peers.has(port))).join('\n');
}

function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    return `(${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
}

/** What a worker process is doing: state, kernel wait channel, and (if it was started with the
 * report flags of workerReportArgs) its libuv handles and JavaScript stack from a diagnostic report. */
export async function processState(pid: number, reportDir?: string): Promise<string> {
  const status = read(`/proc/${pid}/status`).split('\n').filter((line) => /^(State|Threads)/.test(line)).join(' ');
  let text = `pid ${pid}: ${status}; wchan ${read(`/proc/${pid}/wchan`)}\n`;
  if (!reportDir) return text;
  try {
    for (const name of readdirSync(reportDir)) rmSync(`${reportDir}/${name}`, { force: true });
    process.kill(pid, 'SIGUSR2');
  } catch (error) {
    return `${text}(no diagnostic report: ${(error as Error).message})\n`;
  }
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    let files: string[] = [];
    try {
      files = readdirSync(reportDir).filter((name) => name.endsWith('.json'));
    } catch {
      // Not written yet.
    }
    if (files.length > 0) {
      try {
        const report = JSON.parse(readFileSync(`${reportDir}/${files[0]}`, 'utf8')) as {
          javascriptStack?: { message?: string; stack?: string[] };
          libuv?: Array<Record<string, unknown>>;
        };
        // Polls (descriptors watched), timers and streams say what it waits for; the loop's own handles do not.
        const handles = (report.libuv ?? []).filter((handle) => !['async', 'check', 'idle', 'prepare'].includes(String(handle.type))).map((handle) => JSON.stringify(handle)).join('\n');
        return `${text}libuv handles:\n${handles}\njavascript stack: ${report.javascriptStack?.message ?? ''} ${(report.javascriptStack?.stack ?? []).join(' ')}\n`;
      } catch {
        // Still being written.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return `${text}(no diagnostic report within 5 s)\n`;
}

/** Node flags that make a process write a diagnostic report into `dir` on SIGUSR2. */
export function workerReportArgs(dir: string): string[] {
  return ['--report-on-signal', '--report-signal=SIGUSR2', `--report-directory=${dir}`];
}

/** The descriptors of this process and `pids`, and the Unix sockets among them with their peers. */
export function descriptorReport(pids: number[]): string {
  const tables = [process.pid, ...pids].map((pid) => {
    const entries = [...fdTable(pid)].sort(([a], [b]) => a - b).map(([fd, target]) => `${fd}=${target}`);
    return `fds of ${pid}${pid === process.pid ? ' (this test)' : ''}: ${entries.join(' ')}`;
  });
  return `${tables.join('\n')}\nunix sockets (ss -xapn) of these and their peers:\n${unixSockets([process.pid, ...pids])}`;
}
