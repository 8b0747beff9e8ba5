// Reading the config file: a file that cannot be read or parsed is a ConfigError naming it, with its cause.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError } from '../../src/config/schema.ts';

const scratch = mkdtempSync(join(tmpdir(), 'config-load-'));
const checkProperty = () => undefined;

function failure(path: string): ConfigError {
  try {
    loadConfig({ path, checkProperty });
  } catch (error) {
    assert.instance(error, ConfigError);
    return error as ConfigError;
  }
  throw assert.unreachable('loaded');
}

test('a missing file: the path, the errno, and the system error as the cause', () => {
  const path = join(scratch, 'missing.json');
  const error = failure(path);
  assert.is(error.message, `config: ${path}: cannot be read (ENOENT)`);
  assert.is((error.cause as NodeJS.ErrnoException).code, 'ENOENT');
});

test('a file that is not JSON: the path, the parser\'s words, and its SyntaxError as the cause', () => {
  const path = join(scratch, 'broken.json');
  writeFileSync(path, '{ "socketPath": ');
  const error = failure(path);
  assert.match(error.message, `config: ${path}: is not valid JSON (`);
  assert.instance(error.cause, SyntaxError);
});

test.after(() => rmSync(scratch, { recursive: true }));

test.run();
