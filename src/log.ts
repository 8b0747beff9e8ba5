// Log lines for the journal: a priority and, optionally, structured fields (SESSION_UNIT=…, PEER_PID=…).
// Under systemd (JOURNAL_STREAM set, the journal's socket present) each line is one entry sent with
// the native protocol, so fields are searchable (`journalctl SESSION_UNIT=…`); elsewhere a line goes to
// stderr with an sd-daemon `<N>` prefix and its fields appended as KEY=value (sd-daemon(3)).
import { existsSync } from 'node:fs';
import { native } from './native/index.ts';
import { ErrorCode } from './protocol/index.ts';

const PRIORITY = { error: 3, warning: 4, notice: 5, info: 6, debug: 7 } as const;
export type LogLevel = keyof typeof PRIORITY;

/** Field values; undefined and null fields are left out (never logged as zero or empty). */
export type LogFields = Record<string, string | number | bigint | boolean | null | undefined>;

export type Logger = (level: LogLevel, message: string, fields?: LogFields) => void;

/** The fields an operator can search for (docs/operations.md lists them). */
export const LOG_FIELDS = [
  'SESSION_UNIT',
  'OBJECT_SYSTEMD_UNIT',
  'PEER_PID',
  'PEER_UID',
  'PROGRAM',
  'RESULT',
  'EXIT_CODE',
  'EXIT_STATUS',
  'BYTES_IN',
  'BYTES_OUT',
  'DURATION_MS',
  'REFUSAL',
] as const;

/** The journal's native socket (systemd-journald.service(8), "Native protocol"). */
export const JOURNAL_SOCKET = '/run/systemd/journal/socket';

// journald accepts upper-case letters, digits and underscores, not starting with "_" (trusted fields).
const FIELD_NAME = /^[A-Z0-9][A-Z0-9_]{0,63}$/;

/** The fields present, as name/value text pairs; bad names and empty values are dropped. */
export function fieldPairs(fields: LogFields = {}): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null || !FIELD_NAME.test(name)) continue;
    // A newline would need the protocol's binary form; a field value never needs one.
    pairs.push([name, String(value).replace(/[\r\n]+/g, ' ')]);
  }
  return pairs;
}

/** One journal entry in the native protocol's text form: KEY=value lines (pure). */
export function journalEntry(component: string, level: LogLevel, line: string, fields?: LogFields): string {
  const pairs: [string, string][] = [
    ['MESSAGE', `${component}: ${line}`],
    ['PRIORITY', String(PRIORITY[level])],
    ['SYSLOG_IDENTIFIER', 'opencode-pty'],
    ['OPENCODE_PTY_COMPONENT', component],
    ...fieldPairs(fields),
  ];
  return pairs.map(([name, value]) => `${name}=${value.replace(/[\r\n]+/g, ' ')}\n`).join('');
}

/** The stderr form: `<N>component: line KEY=value …` (pure). */
export function stderrLine(component: string, level: LogLevel, line: string, fields?: LogFields): string {
  const suffix = fieldPairs(fields)
    .map(([name, value]) => ` ${name}=${/[\s"]/.test(value) ? JSON.stringify(value) : value}`)
    .join('');
  return `<${PRIORITY[level]}>${component}: ${line}${suffix}\n`;
}

export interface LogSinks {
  stderr(line: string): void;
  /** Sends one native-protocol datagram; throws when the journal cannot take it. */
  journal?: (entry: string) => void;
}

function defaultSinks(env: NodeJS.ProcessEnv = process.env): LogSinks {
  const stderr = (line: string) => void process.stderr.write(line);
  // JOURNAL_STREAM says stderr goes to the journal (systemd.exec(5)): only then is native logging ours to use.
  if (!env.JOURNAL_STREAM || !existsSync(JOURNAL_SOCKET)) return { stderr };
  return { stderr, journal: (entry) => native().sdNotify(JOURNAL_SOCKET, entry) };
}

/**
 * A logger for one component. `write` (the old form) is a stderr sink and turns native logging off;
 * `sinks` chooses both. A journal that refuses an entry (queue full, socket gone) gets it on stderr.
 */
export function createLogger(component: string, write?: ((line: string) => void) | LogSinks): Logger {
  const sinks: LogSinks = typeof write === 'function' ? { stderr: write } : (write ?? defaultSinks());
  return (level, message, fields) => {
    for (const line of message.split('\n')) {
      if (sinks.journal) {
        try {
          sinks.journal(journalEntry(component, level, line, fields));
          continue;
        } catch {
          // fall through to stderr
        }
      }
      sinks.stderr(stderrLine(component, level, line, fields));
    }
  };
}

/** Fields that put a line about a session beside systemd's own in `journalctl -u UNIT` (root senders only). */
export function sessionFields(unit: string | undefined): LogFields {
  return unit ? { SESSION_UNIT: unit, OBJECT_SYSTEMD_UNIT: unit } : {};
}

/** A wire ERROR code's name (docs/protocol.md), e.g. 11 → SHUTDOWN: the REFUSAL and ERROR_CODE fields. */
export function wireCodeName(code: unknown): string | undefined {
  return Object.entries(ErrorCode).find(([, value]) => value === code)?.[0];
}
