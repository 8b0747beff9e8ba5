// The bench probe's kept-session commands (bench/attach.ts): start a kept session and detach, attach
// from an offset and time connect → ATTACHED → first replay byte → last byte, hold an attached
// connection, and the anchors' attaches (`tmux attach`, `dtach -a`) through a terminal (script -qc),
// timed spawn → first byte. Root's side reads memory (USS) of any process and finds the anchors'.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { connect, type Session } from '../src/client/index.ts';
import { cgroupOf, memory, startTicks } from './proc-facts.ts';

type Command = Record<string, any> & { op: string };
const now = () => performance.now();

/** Attached connections held open (their output read and dropped) until keepRelease. */
const holding: Session[] = [];

function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** The broker's other processes (its workers and spare), oldest first. */
function brokerChildren(brokerPid: number): number[] {
  return readFileSync(`/sys/fs/cgroup${cgroupOf(brokerPid)}/cgroup.procs`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => pid !== brokerPid)
    .sort((a, b) => startTicks(a) - startTicks(b));
}

/** One ATTACH from `from`: connect → ATTACHED → first OUTPUT byte → `expect` bytes; then detached. */
async function timedAttach(socket: string, id: number, from: number, expect: number): Promise<Record<string, number>> {
  const t0 = now();
  const client = await connect(socket);
  const welcome = now() - t0;
  const session = await client.attach(id, { from, role: 'control', rows: 24, cols: 80 });
  const attached = now() - t0;
  let first = NaN;
  let bytes = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bytes} of ${expect} bytes in 120 s`)), 120_000);
    session.output.on('data', (chunk: Buffer) => {
      if (!bytes) first = now() - t0;
      bytes += chunk.length;
      if (bytes >= expect) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const complete = now() - t0;
  session.detach();
  return { welcome, attached, first, complete, bytes, oldest: session.offset - bytes };
}

/** An anchor's attach command run in a terminal as the client: spawn → first byte, then `settleMs` more read. */
function terminalAttach(argv: string, account: { uid?: number; gid?: number; cwd: string }, settleMs: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const t0 = now();
    const child = spawn('script', ['-qc', argv, '/dev/null'], { stdio: ['pipe', 'pipe', 'ignore'], uid: account.uid, gid: account.gid, cwd: account.cwd, env: { ...process.env, HOME: account.cwd, TERM: 'xterm' } });
    let first = NaN;
    let bytes = 0;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no output from ${argv} in 10 s`));
    }, 10_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (Number.isNaN(first)) {
        first = now() - t0;
        clearTimeout(timer);
        setTimeout(() => child.kill('SIGTERM'), settleMs);
      }
    });
    child.on('error', reject);
    child.on('close', () => resolve({ first, bytes, closed: now() - t0 }));
  });
}

export async function attachOp(command: Command, supervisorSocket: string): Promise<unknown> {
  switch (command.op) {
    case 'keepStart': {
      const client = await connect(supervisorSocket);
      const session = await client.start({ argv: command.argv, cwd: process.env.HOME ?? '/', keepMs: command.keepMs, retainBytes: command.retainBytes, rows: 24, cols: 80 });
      session.detach();
      return { id: session.id, helperPid: session.mainPid };
    }
    case 'keepList': {
      const client = await connect(supervisorSocket);
      return client.list();
    }
    case 'keepAttach':
      return timedAttach(supervisorSocket, command.id, command.from, command.expect);
    case 'keepHold': {
      const client = await connect(supervisorSocket);
      const session = await client.attach(command.id, { from: 'now', role: 'observe', rows: 24, cols: 80 });
      session.output.resume();
      holding.push(session);
      return { held: holding.length };
    }
    case 'keepRelease':
      for (const session of holding.splice(0)) session.detach();
      return {};
    case 'keepStop': {
      const client = await connect(supervisorSocket);
      return client.stopSession(command.id);
    }
    case 'terminalAttach':
      // asRoot: the operator's CLI (root may attach; the client account's processes may not, but its MainPID).
      return terminalAttach(command.command, command.asRoot ? { cwd: '/' } : command.account, command.settleMs ?? 200);
    case 'memoryOf':
      return Object.fromEntries((command.pids as number[]).map((pid) => [pid, memory(pid)]));
    case 'brokerChildren':
      return brokerChildren(command.brokerPid);
    case 'pidsOf': {
      // Processes whose command line begins with these words (the anchors' servers).
      const prefix = command.prefix as string[];
      return readdirSync('/proc')
        .filter((name) => /^\d+$/.test(name))
        .map(Number)
        .filter((pid) => {
          const words = cmdline(pid);
          return prefix.every((word, i) => words[i] === word);
        });
    }
    default:
      return undefined;
  }
}
