// One journal line per session end, with its reason: the wire code and text of an error, the exit
// status of a program, so a failure before STARTED is never just "ended: error".
import { ErrorCode, type SessionError } from '../protocol/index.ts';
import type { ExitStatus } from '../systemd/index.ts';

export interface EndFacts {
  reason: string;
  error?: SessionError;
  exit?: ExitStatus;
}

const CODE_NAMES = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

export function describeEnd(end: EndFacts): string {
  const parts: string[] = [end.reason];
  if (end.exit) parts.push(`(code ${end.exit.code} status ${end.exit.status} result ${end.exit.result})`);
  if (end.error) {
    const cause = end.error.cause instanceof Error ? `; cause: ${end.error.cause.message}` : '';
    parts.push(`(${CODE_NAMES.get(end.error.wireCode) ?? end.error.wireCode}: ${end.error.message}${cause})`);
  }
  return parts.join(' ');
}
