// Every worker gets the config: in its environment (one string, at most MAX_ARG_STRLEN = 128 KiB
// with its name, execve(2): E2BIG beyond) or, the first spare, as a control message of at most
// MAX_BROKER_MESSAGE. A config the schema accepts but neither can carry starts a broker that says
// READY and answers every START with INTERNAL ("no spare worker could be started"): the size must
// be refused where the config is loaded, as a ConfigError naming it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { parseAccounts } from '../../src/config/accounts.ts';
import { ConfigError, validateConfig } from '../../src/config/schema.ts';
import { workerEnvironment } from '../../src/broker/worker-process.ts';

const accounts = parseAccounts('root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/sh\n', 'root:x:0:\nagent:x:1500:\nopencode-pty:x:1800:\n');
const allowAll = (): string | undefined => undefined;

test('a config the schema accepts can be given to a worker', () => {
  // About 160 KiB of JSON: valid names, nothing else unusual.
  const raw = {
    client: { user: 'agent', service: 'agent.service' },
    session: { environmentDeny: Array.from({ length: 6000 }, (_, i) => `SECRET_VARIABLE_${String(i).padStart(5, '0')}`) },
  };
  let config;
  try {
    config = validateConfig(raw, accounts, allowAll);
  } catch (error) {
    assert.instance(error, ConfigError);
    assert.match((error as Error).message, /bytes as JSON/);
    return;
  }
  // What every spare after the first gets (worker-pool.ts WorkerPool.of).
  const env = workerEnvironment({}, config, undefined);
  const spawned = spawnSync(process.execPath, ['-e', '0'], { env });
  assert.is(spawned.error, undefined, `a worker cannot be started with it: ${spawned.error?.message}`);
});

test.run();
