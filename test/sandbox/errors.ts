// The sandbox's one error class: a stable `code` to branch on, a message for people.

export type SandboxErrorCode =
  | 'SANDBOX_UNAVAILABLE' // not root, no systemd, no cgroup2, no util-linux tools
  | 'SANDBOX_BOOT_FAILED' // the first stage or systemd exited, or the system came up degraded
  | 'SANDBOX_BOOT_TIMEOUT' // no working system bus before the deadline
  | 'SANDBOX_STOPPED' // used after stop()
  | 'SANDBOX_EXEC_TIMEOUT' // exec() ran past its timeoutMs and was killed
  | 'SANDBOX_SERVICE_FAILED' // startClientService() could not bring its unit up
  | 'SANDBOX_STOP_FAILED' // systemd or its cgroup outlived every stop step
  | 'SANDBOX_HOST_CHANGED'; // the host check found a difference after stop

export class SandboxError extends Error {
  readonly code: SandboxErrorCode;

  constructor(code: SandboxErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxError';
    this.code = code;
  }
}
