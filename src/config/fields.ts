// The config file's field readers (pure): each names the field it refuses, as ConfigError.

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(
    readonly field: string,
    problem: string,
    options?: { cause?: unknown },
  ) {
    super(`config: ${field}: ${problem}`, options);
  }
}

export type Json = Record<string, unknown>;

export function object(value: unknown, field: string): Json {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(field, 'must be an object');
  return value as Json;
}

export function only(value: Json, field: string, allowed: string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw new ConfigError(field ? `${field}.${key}` : key, 'unknown setting');
  }
}

export function string(value: unknown, field: string, fallback?: string, pattern?: RegExp): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string' || value === '') throw new ConfigError(field, 'must be a non-empty string');
  if (pattern && !pattern.test(value)) throw new ConfigError(field, `must match ${pattern}`);
  return value;
}

export function integer(value: unknown, field: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(field, `must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function boolean(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new ConfigError(field, 'must be true or false');
  return value;
}

/** Absolute paths for the helper's Landlock rules (ExecStart arguments): no control byte, no "..", at most
 * 32 each: with the built-in ones, within the session helper's bound of 96 (native/session/landlock.h).
 * `unitFile`: also written into the session unit (ReadWritePaths=), whose parser splits on whitespace and ':'. */
export function absolutePaths(raw: unknown, field: string, unitFile = false): string[] {
  const list = raw ?? [];
  if (!Array.isArray(list) || list.length > 32) throw new ConfigError(field, 'must be a list of at most 32 absolute paths');
  return list.map((path, index) => {
    const value = string(path, `${field}[${index}]`, undefined, /^\/[^\0-\x1f\x7f\\]{0,4095}$/);
    if (value.split('/').includes('..')) throw new ConfigError(`${field}[${index}]`, 'must not contain ".."');
    if (unitFile && !/^\/[^\0-\x20\x7f:"'\\]*$/.test(value)) throw new ConfigError(`${field}[${index}]`, 'must not contain whitespace, quotes or ":" (it is written into the session unit)');
    return value;
  });
}
