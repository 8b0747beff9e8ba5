// The value options `run`, `ls` and `attach` share: how a value is taken and how --socket and --timeout read.

/** The value of option NAME written as ARG at ARGS[INDEX]: after '=' (--name=value), else the next argument.
 * Gives the index of the last argument used, or the usage message when the value is missing. */
export function takeOptionValue(args: readonly string[], index: number, name: string, arg: string): { value: string; index: number } | { message: string } {
  if (name !== arg) return { value: arg.slice(name.length + 1), index };
  const next = args[index + 1];
  if (next === undefined) return { message: `${name} needs a value` };
  return { value: next, index: index + 1 };
}

/** --socket's path, or the usage message. */
export function parseSocketValue(value: string): string | { message: string } {
  return value === '' ? { message: '--socket needs a path' } : value;
}

/** --timeout's seconds (up to a day) as milliseconds, or the usage message. */
export function parseTimeoutValue(value: string): number | { message: string } {
  const seconds = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(seconds <= 86_400)) return { message: `--timeout needs a number of seconds up to 86400, got ${JSON.stringify(value)}` };
  return Math.round(seconds * 1000);
}
