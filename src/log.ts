// Log lines to stderr with sd-daemon priority prefixes, which the journal turns into priorities (sd-daemon(3)).
const PRIORITY = { error: 3, warning: 4, notice: 5, info: 6, debug: 7 } as const;
export type LogLevel = keyof typeof PRIORITY;

export type Logger = (level: LogLevel, message: string) => void;

export function createLogger(component: string, write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  return (level, message) => {
    for (const line of message.split('\n')) write(`<${PRIORITY[level]}>${component}: ${line}\n`);
  };
}
