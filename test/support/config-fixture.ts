// A complete configuration for unit tests that need one but no sandbox: the client account and its
// service as the defaults below, everything else as the schema's defaults. Copies, so a test may change its own.
import { DEFAULT_LIMITS, DEFAULT_SESSION, type Config } from '../../src/config/schema.ts';

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    client: { user: 'agent', group: 'agent', uid: 1500, gid: 1500, service: 'agent.service' },
    requireClientUnit: true,
    socketPath: '/run/opencode-pty/supervisor.sock',
    socketGroup: 'opencode-pty',
    socketGid: 4240,
    unitPrefix: 'opencode-pty-',
    helperPath: '',
    limits: { ...DEFAULT_LIMITS },
    session: { ...DEFAULT_SESSION },
    ...overrides,
  };
}
