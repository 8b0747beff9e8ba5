// `opencode-ptyctl ls` and `attach ID`: the operator's view of kept sessions, and this terminal joined to one.
import { once } from 'node:events';
import type { ReadStream } from 'node:tty';
import { connect, exitStatus, isClientError, type Session, type SessionEnd } from '../client/index.ts';
import { DetachKeyFilter } from './detach-key.ts';
import type { AttachCommand, ListCommand } from './keep-args.ts';
import { FAILURE_EXIT } from './run-args.ts';
import type { Stdio } from './run.ts';
import { formatSessionTable } from './session-table.ts';
import { eightBitLocale, TerminalOutputFilter } from './terminal-filter.ts';
import { enterRawMode, terminalSize } from './terminal.ts';

/** Lists kept sessions as a table or JSON on stdout. Never rejects: failures go to stderr. */
export async function runList(command: ListCommand, stdio: Stdio): Promise<number> {
  try {
    const client = await connect(command.socket, timeoutOf(command));
    const sessions = await client.list(timeoutOf(command));
    stdio.stdout.write(command.json ? `${JSON.stringify(sessions, null, 2)}\n` : formatSessionTable(sessions, Date.now()));
    return 0;
  } catch (error) {
    stdio.stderr.write(`opencode-ptyctl: ${describe(error)}\n`);
    return FAILURE_EXIT;
  }
}

/** Attaches this terminal to a kept session until the detach key, the session's end, SIGTERM or SIGHUP
 * (those detach: the session goes on). Never rejects. */
export async function runAttach(command: AttachCommand, stdio: Stdio): Promise<number> {
  const cleanups: (() => void)[] = [];
  try {
    return await attachTerminal(command, stdio, cleanups);
  } catch (error) {
    stdio.stderr.write(`opencode-ptyctl: ${describe(error)}\n`);
    return FAILURE_EXIT;
  } finally {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  }
}

async function attachTerminal(command: AttachCommand, stdio: Stdio, cleanups: (() => void)[]): Promise<number> {
  const { stdout, stderr } = stdio;
  // \r\n: the terminal may be raw by the time a note is written.
  const note = (text: string) => stderr.write(`\r\n[opencode-ptyctl: ${text}]\r\n`);
  const client = await connect(command.socket, timeoutOf(command));
  const session = await client.attach(command.id, {
    from: command.from,
    role: command.role,
    ...terminalSize([stdout, stderr]),
    ...timeoutOf(command),
  });
  session.on('truncated', ({ oldest, dropped }) => note(`${dropped} bytes before offset ${oldest} are no longer retained`));
  session.on('controller-changed', ({ role }) => note(role === 'control' ? 'this terminal controls the session now' : 'another connection took control: observing'));
  const outputEnded = once(session.output, 'end');
  // Filtered unless --raw, on a terminal or not: a pipe's bytes end on someone's terminal too (a log, a pager).
  // Raw C1 bytes are judged as the locale says this terminal reads them.
  const filter = command.raw ? undefined : new TerminalOutputFilter({ eightBit: eightBitLocale(process.env) });
  const onOutput = (chunk: Buffer) => {
    const bytes = filter ? filter.feed(chunk) : chunk;
    if (bytes.length > 0 && !stdout.write(bytes)) {
      session.output.pause();
      stdout.once('drain', () => session.output.resume());
    }
  };
  session.output.on('data', onOutput);
  const onStdoutError = () => session.close();
  stdout.on('error', onStdoutError);
  cleanups.push(() => stdout.off('error', onStdoutError));
  for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
    const detach = () => session.ended || session.detach();
    process.on(signal, detach);
    cleanups.push(() => process.off(signal, detach));
  }
  attachKeyboard(session, stdio, cleanups);
  const end: SessionEnd = await session.exit;
  await outputEnded;
  if (end.reason === 'detached') {
    note(`detached from session ${command.id} at offset ${session.offset}`);
    return 0;
  }
  return exitStatus(end);
}

/** A terminal's keys go to the session (a controller's) through the detach-key filter; a pipe's bytes as they
 * come (no detach key there). An observer's keys are not sent: only the detach key acts. */
function attachKeyboard(session: Session, stdio: Stdio, cleanups: (() => void)[]): void {
  const { stdin, stdout, stderr } = stdio;
  if (!stdin.isTTY) {
    if (session.role === 'control') stdin.pipe(session.input, { end: false });
    cleanups.push(() => (stdin.unpipe(session.input), stdin.pause()));
    return;
  }
  cleanups.push(enterRawMode(stdin as ReadStream));
  const keys = new DetachKeyFilter();
  const onData = (chunk: Buffer) => {
    const { forward, detach } = keys.feed(chunk);
    if (forward.length > 0 && session.role === 'control' && !session.ended) session.write(forward);
    if (detach && !session.ended) session.detach();
  };
  stdin.on('data', onData);
  cleanups.push(() => (stdin.off('data', onData), stdin.pause()));
  const onResize = () => {
    const { rows, cols } = terminalSize([stdout, stderr]);
    if (session.role === 'control' && !session.ended) session.resize(rows, cols);
  };
  process.on('SIGWINCH', onResize);
  cleanups.push(() => process.off('SIGWINCH', onResize));
}

function timeoutOf(command: { timeoutMs: number | undefined }): { timeoutMs?: number } {
  return command.timeoutMs === undefined ? {} : { timeoutMs: command.timeoutMs };
}

function describe(error: unknown): string {
  if (isClientError(error)) return `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
