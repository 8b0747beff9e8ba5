// `opencode-ptyctl run`: one session attached to this process's stdio, ending with a shell-like exit status.
import { once } from 'node:events';
import { constants } from 'node:os';
import type { ReadStream } from 'node:tty';
import { FAILURE_EXIT, USAGE_EXIT, type RunCommand } from './run-args.ts';
import { TIMEOUT_STATUS, budgetEndLine } from './sandbox-args.ts';
import { connect, exitStatus, isClientError, type Session, type SessionEnd } from '../client/index.ts';
import { readResizeFd, unusableFd } from './resize-fd.ts';
import { enterRawMode, terminalSize } from './terminal.ts';
import { DetachKeyFilter } from './detach-key.ts';
import { durationText } from './keep-args.ts';

export interface Stdio {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

/** Passed on to the session's processes, which decide what they mean. */
const FORWARDED = ['SIGINT', 'SIGQUIT'] as const;
/** End the session (STOP, then wait for STOPPED); a second one drops the connection at once. */
const STOPPING = ['SIGTERM', 'SIGHUP'] as const;
const SIGPIPE_STATUS = 128 + constants.signals.SIGPIPE;

/** Runs the command; resolves with the status to exit with. Never rejects: failures go to stderr. */
export async function runCommand(command: RunCommand, stdio: Stdio): Promise<number> {
  const cleanups: (() => void)[] = [];
  const unusable = command.resizeFd === undefined ? undefined : unusableFd(command.resizeFd);
  if (unusable !== undefined) {
    stdio.stderr.write(`opencode-ptyctl: --resize-fd ${command.resizeFd}: ${unusable}\n`);
    return USAGE_EXIT;
  }
  try {
    return await new Run(command, stdio, cleanups).run();
  } catch (error) {
    stdio.stderr.write(`opencode-ptyctl: ${describe(error)}\n`);
    return FAILURE_EXIT;
  } finally {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  }
}

class Run {
  readonly #command: RunCommand;
  readonly #stdio: Stdio;
  readonly #cleanups: (() => void)[];
  readonly #abort = new AbortController();
  #session: Session | undefined;
  /** 128+N once a signal N decided how this command ends. */
  #signalStatus: number | undefined;
  #stopping = false;

  constructor(command: RunCommand, stdio: Stdio, cleanups: (() => void)[]) {
    this.#command = command;
    this.#stdio = stdio;
    this.#cleanups = cleanups;
  }

  async run(): Promise<number> {
    this.#trapSignals();
    const { stdin, stdout } = this.#stdio;
    let session: Session;
    try {
      const timeout = this.#command.timeoutMs === undefined ? {} : { timeoutMs: this.#command.timeoutMs };
      const client = await connect(this.#command.socket, { signal: this.#abort.signal, ...timeout });
      session = await client.start({
        argv: this.#command.argv,
        ...(this.#command.cwd === undefined ? {} : { cwd: this.#command.cwd }),
        env: this.#command.env,
        ...(this.#command.keep ?? {}),
        ...(this.#command.sandbox ?? {}),
        ...this.#initialSize(),
        signal: this.#abort.signal,
        ...timeout,
      });
    } catch (error) {
      if (this.#signalStatus !== undefined) return this.#signalStatus;
      throw error;
    }
    this.#session = session;
    if (session.kept) {
      this.#stdio.stderr.write(
        `opencode-ptyctl: session ${session.id} is kept ${durationText(this.#command.keep!.keepMs)} after this command ends (detach: C-b d; attach with: opencode-ptyctl attach ${session.id})\r\n`,
      );
    }
    const outputEnded = once(session.output, 'end');
    let brokenPipe = false;
    const onStdoutError = () => {
      brokenPipe = true;
      session.close();
    };
    stdout.on('error', onStdoutError);
    this.#cleanups.push(() => stdout.off('error', onStdoutError));
    // end: false — the session's end is not the end of our stdout, nor is the end of stdin the session's.
    session.output.pipe(stdout, { end: false });
    this.#attachInput(session, stdin);
    this.#attachResizeFd(session);

    let end: SessionEnd;
    try {
      end = await session.exit;
    } catch (error) {
      if (brokenPipe) return SIGPIPE_STATUS;
      if (this.#signalStatus !== undefined) return this.#signalStatus;
      throw error;
    }
    await outputEnded;
    if (end.reason === 'detached') {
      this.#stdio.stderr.write(`\r\nopencode-ptyctl: detached from session ${session.id} at offset ${session.offset}\r\n`);
      return this.#signalStatus ?? 0;
    }
    // A budget's end is told, and the wall clock's has timeout(1)'s status (sandbox-args.ts).
    const told = budgetEndLine(end.result);
    if (told) this.#stdio.stderr.write(`\r\n${told}\r\n`);
    return this.#signalStatus ?? (end.result === 'timeout' ? TIMEOUT_STATUS : exitStatus(end));
  }

  /** The measured size, with --rows and --cols over it. */
  #initialSize(): { rows: number; cols: number } {
    const measured = terminalSize([this.#stdio.stdout, this.#stdio.stderr]);
    return { rows: this.#command.rows ?? measured.rows, cols: this.#command.cols ?? measured.cols };
  }

  /** --resize-fd: each size line resizes the session's terminal. */
  #attachResizeFd(session: Session): void {
    if (this.#command.resizeFd === undefined) return;
    const stop = readResizeFd(
      this.#command.resizeFd,
      ({ rows, cols }) => {
        if (!session.ended) session.resize(rows, cols);
      },
      (message) => this.#stdio.stderr.write(`opencode-ptyctl: ${message}\n`),
    );
    this.#cleanups.push(stop);
  }

  #attachInput(session: Session, stdin: NodeJS.ReadStream): void {
    if (stdin.isTTY) {
      this.#cleanups.push(enterRawMode(stdin as ReadStream));
      const onResize = () => {
        const { rows, cols } = terminalSize([this.#stdio.stdout, this.#stdio.stderr]);
        if (!session.ended) session.resize(rows, cols);
      };
      process.on('SIGWINCH', onResize);
      this.#cleanups.push(() => process.off('SIGWINCH', onResize));
    }
    if (stdin.isTTY && session.kept) return this.#attachKeys(session, stdin);
    // Not a terminal: pass bytes through until stdin ends; then END_INPUT lets the program see end of file
    // (protocol version 2; a version 1 server cannot be told, so input just stops).
    stdin.pipe(session.input, { end: !stdin.isTTY && session.canEndInput });
    this.#cleanups.push(() => {
      stdin.unpipe(session.input);
      stdin.pause();
    });
  }

  /** A kept session's keys go through the detach-key filter (tmux's C-b d leaves the session running). */
  #attachKeys(session: Session, stdin: NodeJS.ReadStream): void {
    const keys = new DetachKeyFilter();
    const onData = (chunk: Buffer) => {
      const { forward, detach } = keys.feed(chunk);
      if (forward.length > 0 && !session.ended && session.role === 'control') session.write(forward);
      if (detach && !session.ended) session.detach();
    };
    stdin.on('data', onData);
    this.#cleanups.push(() => {
      stdin.off('data', onData);
      stdin.pause();
    });
  }

  #trapSignals(): void {
    for (const signal of [...FORWARDED, ...STOPPING]) {
      const handler = () => this.#onSignal(signal);
      process.on(signal, handler);
      this.#cleanups.push(() => process.off(signal, handler));
    }
  }

  #onSignal(signal: (typeof FORWARDED)[number] | (typeof STOPPING)[number]): void {
    const signo = constants.signals[signal];
    const session = this.#session;
    if (!session) {
      // Not started yet: give up the handshake; run() returns this status.
      this.#signalStatus = 128 + signo;
      this.#abort.abort();
      return;
    }
    if (session.ended) return;
    if ((FORWARDED as readonly string[]).includes(signal)) return session.signal(signo);
    this.#signalStatus ??= 128 + signo;
    if (this.#stopping) return session.close();
    this.#stopping = true;
    // Failures surface through session.exit, which run() awaits.
    session.stop().catch(() => {});
  }
}

function describe(error: unknown): string {
  if (isClientError(error)) return `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
