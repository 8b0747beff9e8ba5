// Reads and validates the config file; every failure is a ConfigError naming the file or field.
import { readFileSync } from 'node:fs';
import { systemAccounts } from './accounts.ts';
import { ConfigError, DEFAULT_CONFIG_PATH, validateConfig, type AccountLookup, type Config } from './schema.ts';

export interface LoadOptions {
  path?: string;
  accounts?: AccountLookup;
  checkProperty: (name: string, value: unknown) => string | undefined;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.OPENCODE_PTY_CONFIG || DEFAULT_CONFIG_PATH;
}

export function loadConfig(options: LoadOptions): Config {
  const path = options.path ?? configPath();
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(path, `cannot be read (${(error as NodeJS.ErrnoException).code ?? error})`, { cause: error });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(path, `is not valid JSON (${(error as Error).message})`, { cause: error });
  }
  return validateConfig(raw, options.accounts ?? systemAccounts(), options.checkProperty);
}
