// What the build runs once before it writes cli-main.cjs's code cache (src/boot/produce-cache.ts):
// the pure part of `run` (its command line, the frames it sends and the ones it reads, the exit
// status), so that code is compiled in the cache and not while a session starts (V8 compiles each
// function the first time it runs). Nothing is connected, sent or kept.
import { ACCOUNTING_FIELDS, FrameDecoder, KEEP_VERSION, PROTOCOL_VERSION, encodeFrame, type Accounting, type Frame } from '../protocol/index.ts';
import { exitStatus } from '../client/index.ts';
import { parseCommandLine } from './run-args.ts';

/** Never throws: a failed warm-up only means a run compiles as it goes; the build says why. */
export function warmUp(): string | undefined {
  try {
    const command = parseCommandLine(['run', '--socket', '/run/x.sock', '--env', 'LANG=C', '--', 'sh', '-c', 'echo hi'], { TERM: 'xterm' });
    if (command.kind !== 'run') return `the command line parsed as ${command.kind}`;
    encodeFrame({ type: 'hello', minVersion: PROTOCOL_VERSION, maxVersion: KEEP_VERSION });
    const entries = Object.entries(command.env).map(([name, value]) => ({ name, value }));
    encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 1n, argv: command.argv, env: entries, keepMs: 0, retainBytes: 0, label: '' }, KEEP_VERSION);
    encodeFrame({ type: 'input', data: Buffer.from('x') }, KEEP_VERSION);
    encodeFrame({ type: 'credit', bytes: 65536 }, KEEP_VERSION);
    // What the server sends, through the decoder the client reads with.
    const decoder = new FrameDecoder('to-client');
    const welcome = decoder.push(encodeFrame({ type: 'welcome', version: KEEP_VERSION }));
    if (welcome[0]?.type !== 'welcome') return 'WELCOME did not decode';
    decoder.version = KEEP_VERSION;
    const server: Frame[] = [
      { type: 'started', mainPid: 2, unit: 'opencode-pty-session-0.service', programPid: 3, droppedEnv: [], sessionId: 1 },
      { type: 'output', data: Buffer.from('hi\r\n') },
      { type: 'exit', code: 1, status: 0, result: 'success', accounting: Object.fromEntries(ACCOUNTING_FIELDS.map((name) => [name, null])) as unknown as Accounting },
    ];
    const frames = decoder.push(Buffer.concat(server.map((frame) => encodeFrame(frame, KEEP_VERSION))));
    const end = frames.at(-1);
    if (end?.type !== 'exit') return 'EXIT did not decode';
    exitStatus(end);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
