// The agent stand-in's kept-session commands ({"keep": KeepOrder}): the client library's start with
// keepMs, detach, list, attach, stopSession, as the agent's MainPID (or a child, through `once`).
// Named sessions stay open in this process between commands; every read is summed up as its bytes'
// count and sha256, with the offsets the connection saw.
import { createHash } from 'node:crypto';
import { connect, type Session } from '../../src/client/index.ts';
import type { Budgets } from '../../src/protocol/index.ts';
import { rawAttachThenFd, rawStartThenClose } from './keep-raw.ts';

export type KeepOrder =
  /** `cwd`: the START's directory inside the sandbox; the agent's home when absent. */
  | { op: 'start'; name: string; argv: string[]; keepMs: number; retainBytes?: number; label?: string; read?: Read; network?: 'off' | 'host-loopback' | 'on'; cwd?: string; budgets?: Budgets }
  | { op: 'attach'; name: string; id: number; from?: number; role?: 'control' | 'observe'; rows?: number; cols?: number; read?: Read }
  | { op: 'read'; name: string; read: Read }
  | { op: 'write'; name: string; data: string }
  /** Detaches a kept session; closes (ends) one that is not kept. */
  | { op: 'detach'; name: string }
  | { op: 'list' }
  | { op: 'stop-session'; id: number }
  /** Review probes, by hand on the wire (keep-raw.ts): a kept START closed at once; an ATTACH that then sends a descriptor. */
  | { op: 'raw-start-close'; argv: string[]; keepMs: number; label: string }
  | { op: 'raw-attach-fd'; id: number }
  /** Attach (observe, from now) and detach, `count` times in a row: how many went, and the first refusal. */
  | { op: 'attach-cycles'; id: number; count: number }
  /** LIST `count` times in a row (an agent polling its kept sessions): how many were answered. */
  | { op: 'list-cycles'; count: number };

/** Read until this many bytes in total on the connection, or its end (EXIT/STOPPED/ERROR), within ms. */
export interface Read {
  bytes?: number;
  untilEnd?: boolean;
  ms?: number;
}

export interface KeepAnswer {
  error?: string;
  message?: string;
  id?: number;
  /** The offset of this connection's first byte (ATTACHED's start, 0 for STARTED) and after its last. */
  first?: number;
  offset?: number;
  bytes?: number;
  sha256?: string;
  truncated?: { oldest: number; dropped: number }[];
  changes?: { generation: number; role: string }[];
  end?: unknown;
  endError?: string;
  list?: unknown[];
  role?: string;
  generation?: number;
  cycles?: number;
  frames?: string[];
  sendFd?: string;
}

interface Held {
  session: Session;
  chunks: Buffer[];
  first: number;
  truncated: { oldest: number; dropped: number }[];
  changes: { generation: number; role: string }[];
  end?: unknown;
  endError?: string;
  ended: Promise<void>;
}

const held = new Map<string, Held>();
const SOCKET = process.env.TORTURE_SOCKET ?? '/run/opencode-pty/supervisor.sock';

function hold(name: string, session: Session): Held {
  const entry: Held = { session, chunks: [], first: session.offset, truncated: [], changes: [], ended: Promise.resolve() };
  session.output.on('data', (chunk: Buffer) => entry.chunks.push(chunk));
  session.on('truncated', (event) => entry.truncated.push(event));
  session.on('controller-changed', (event) => entry.changes.push(event));
  entry.ended = session.exit.then(
    (end) => void (entry.end = end),
    (error: { code?: string; message?: string }) => void (entry.endError = `${error.code}: ${error.message}`),
  );
  held.set(name, entry);
  return entry;
}

async function readSome(entry: Held, read: Read = {}): Promise<void> {
  const until = Date.now() + (read.ms ?? 20_000);
  const total = () => entry.chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  while (Date.now() < until) {
    if (read.bytes !== undefined && total() >= read.bytes) return;
    if (entry.end !== undefined || entry.endError !== undefined) {
      // The stream's last chunks are pushed before the end: give them a turn to arrive.
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    if (!read.untilEnd && read.bytes === undefined) return;
    await Promise.race([entry.ended, new Promise((resolve) => setTimeout(resolve, 20))]);
  }
}

function summary(entry: Held): KeepAnswer {
  const data = Buffer.concat(entry.chunks);
  return {
    id: entry.session.id,
    first: entry.first,
    offset: entry.session.offset,
    bytes: data.length,
    sha256: createHash('sha256').update(data).digest('hex'),
    truncated: entry.truncated,
    changes: entry.changes,
    end: entry.end,
    endError: entry.endError,
    role: entry.session.role,
    generation: entry.session.generation,
  };
}

export async function keepCommand(order: KeepOrder, cwd: string): Promise<KeepAnswer> {
  try {
    switch (order.op) {
      case 'start': {
        const client = await connect(SOCKET);
        const session = await client.start({ argv: order.argv, cwd: order.cwd ?? cwd, keepMs: order.keepMs, retainBytes: order.retainBytes, label: order.label, rows: 24, cols: 80, ...(order.network ? { network: order.network } : {}), ...(order.budgets ? { budgets: order.budgets } : {}) });
        const entry = hold(order.name, session);
        await readSome(entry, order.read);
        return summary(entry);
      }
      case 'attach': {
        const client = await connect(SOCKET);
        const session = await client.attach(order.id, { from: order.from, role: order.role, rows: order.rows, cols: order.cols });
        const entry = hold(order.name, session);
        await readSome(entry, order.read);
        return summary(entry);
      }
      case 'read': {
        const entry = held.get(order.name)!;
        await readSome(entry, order.read);
        return summary(entry);
      }
      case 'write': {
        held.get(order.name)!.session.write(order.data);
        return {};
      }
      case 'detach': {
        const entry = held.get(order.name)!;
        // A session that is not kept ends with its connection: closed, as its client would.
        if (entry.session.kept) entry.session.detach();
        else entry.session.close();
        held.delete(order.name);
        return summary(entry);
      }
      case 'list': {
        const client = await connect(SOCKET);
        return { list: await client.list() };
      }
      case 'stop-session': {
        const client = await connect(SOCKET);
        return { end: await client.stopSession(order.id) };
      }
      case 'raw-start-close':
        return await rawStartThenClose(SOCKET, cwd, order.argv, order.keepMs, order.label);
      case 'raw-attach-fd':
        return await rawAttachThenFd(SOCKET, order.id);
      case 'attach-cycles': {
        let cycles = 0;
        for (; cycles < order.count; cycles += 1) {
          try {
            const client = await connect(SOCKET);
            const session = await client.attach(order.id, { role: 'observe', from: 'now' });
            session.detach();
          } catch (error) {
            const { code, message } = error as { code?: string; message?: string };
            return { cycles, error: code ?? 'failed', message };
          }
        }
        return { cycles };
      }
      case 'list-cycles': {
        let cycles = 0;
        for (; cycles < order.count; cycles += 1) {
          try {
            await (await connect(SOCKET)).list();
          } catch (error) {
            const { code, message } = error as { code?: string; message?: string };
            return { cycles, error: code ?? 'failed', message };
          }
        }
        return { cycles };
      }
    }
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    return { error: code ?? 'failed', message };
  }
}
