// Runs the pure part of a session's start once in a spare worker, before it says ready: V8 compiles
// each function the first time it runs (7 ms for the D-Bus codec alone on these machines), and that
// should not happen while a client waits for STARTED. Nothing is sent and nothing is kept.
import { randomBytes } from 'node:crypto';
import type { Config } from '../config/index.ts';
import { HEADER_SIZE, PROTOCOL_VERSION, encodeFrame, parseHeader, parsePayload } from '../protocol/index.ts';
import { warmUpCodec, unitMatchRules, unitNameFor, sessionUnitProperties, programLabel } from '../systemd/index.ts';
import { environmentPolicy, programEnvironment } from './environment.ts';

/** Never throws: a failed warm-up only means the first session compiles as it goes. */
export function warmUp(config: Config, helperPath: string): string | undefined {
  try {
    const start = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 1n, argv: ['sh'], env: [{ name: 'LANG', value: 'C' }] });
    const { type } = parseHeader(start, 'to-server');
    const frame = parsePayload(type, start.subarray(HEADER_SIZE));
    if (frame.type !== 'start') return 'the START frame did not decode as START';
    const name = unitNameFor(randomBytes(16), config.unitPrefix);
    unitMatchRules(name);
    const tuples = sessionUnitProperties({
      description: `opencode-pty session ${programLabel(frame.argv[0]!)}`,
      helperPath,
      helperArgs: [`--protocol=${PROTOCOL_VERSION}`, `--write-timeout-ms=${config.limits.writeTimeoutMs}`, `--stop-timeout-sec=${config.session.stopTimeoutSec}`, String(frame.rows), String(frame.cols), ...frame.argv],
      user: config.client.user,
      group: config.client.group,
      cwdFd: 0,
      stdoutFd: 1,
      stderrFd: 2,
      environment: Object.fromEntries(programEnvironment(frame.env, environmentPolicy(config.session, config.session.minProfile), config.session.term).environment),
      slice: config.session.slice,
      stopTimeoutSec: config.session.stopTimeoutSec,
      limits: config.session.properties,
    });
    warmUpCodec(tuples);
    encodeFrame({ type: 'started', mainPid: 1, unit: name });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
