// One booted sandbox: its identity, commands run inside it, files put into it, and its one teardown.
import type { ChildProcess } from 'node:child_process';
import { SandboxError } from './errors.ts';
import { execArgv, runInside, spawnInside, type ExecOptions, type ExecResult } from './exec.ts';
import { hostPidOf, pid1Alive, type PidNamespaceIdentity } from './namespaces.ts';
import type { BootLog } from './boot-log.ts';
import type { Launched } from './launch.ts';
import { SOCKET_GROUP, type TestAccount } from './seed.ts';

const UNIT_NAME = /^[A-Za-z0-9:_.\\@-]+\.(service|socket|target|timer|path|slice|mount)$/;

export interface SandboxParts {
  name: string;
  runDir: string;
  client: TestAccount;
  other: TestAccount;
  launched: Launched;
  log: BootLog;
  bootMs: number;
  /** The one teardown (stop.ts); runs once. */
  teardown: () => Promise<void>;
}

export class Sandbox {
  readonly name: string;
  /** Host PID of the sandbox's systemd. */
  readonly pid1: number;
  /** Host path of the sandbox's / (through /proc: read here, but write with install(), which resolves links inside). */
  readonly root: string;
  readonly busAddress: string;
  /** Host directory bound at /run/opencode-pty inside. */
  readonly runDir: string;
  readonly client: TestAccount;
  readonly other: TestAccount;
  /** Inode of the sandbox's pid namespace (what every kill re-checks). */
  readonly pidNamespace: number;
  /** The pid namespace named so it survives inode and PID reuse (for processesOfNamespace()). */
  readonly identity: PidNamespaceIdentity;
  /** Where the boot log is written (kept after stop, for failed runs). */
  readonly bootLogPath: string;
  #parts: SandboxParts;
  #stopping: Promise<void> | undefined;

  constructor(parts: SandboxParts) {
    this.#parts = parts;
    this.name = parts.name;
    this.pid1 = parts.launched.pid1;
    this.root = `/proc/${this.pid1}/root`;
    this.busAddress = `unix:path=${this.root}/run/dbus/system_bus_socket`;
    this.runDir = parts.runDir;
    this.client = parts.client;
    this.other = parts.other;
    this.pidNamespace = parts.launched.pidNamespace;
    this.identity = { pid1: this.pid1, pid1Start: parts.launched.pid1Start, pidNamespace: this.pidNamespace };
    this.bootLogPath = parts.log.path;
  }

  /** Start of bootSandbox() to a working system bus, in ms. */
  get bootMs(): number {
    return this.#parts.bootMs;
  }

  #assertRunning(): void {
    if (this.#stopping) throw new SandboxError('SANDBOX_STOPPED', `sandbox ${this.name} is stopped`);
    // The PID could have been reused by now: check it still is our PID 1 in our namespace.
    if (!pid1Alive(this.#parts.launched)) {
      throw new SandboxError('SANDBOX_STOPPED', `sandbox ${this.name}'s systemd (pid ${this.pid1}) is gone:\n${this.bootLog()}`);
    }
  }

  #argv(argv: string[], options: ExecOptions): string[] {
    this.#assertRunning();
    return execArgv(this.pid1, argv, options, { client: this.client, other: this.other });
  }

  /** Runs argv inside every namespace of the sandbox, as root or as an account. */
  exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    return runInside(this.#argv(argv, options), options, this.pidNamespace);
  }

  /**
   * Spawns argv inside the sandbox (for long-running peers). kill() on the returned process
   * signals argv itself; its pid and exit status are nsenter's, which exits as argv does.
   */
  spawn(argv: string[], options: ExecOptions = {}): ChildProcess {
    return spawnInside(this.#argv(argv, options), options.input, this.pidNamespace);
  }

  /** Copies host files or contents into the sandbox; paths are resolved inside, so links cannot lead out. */
  async install(files: { from?: string; content?: string | Buffer; to: string; mode?: number }[]): Promise<void> {
    const { readFile } = await import('node:fs/promises');
    for (const file of files) {
      if (!file.to.startsWith('/')) throw new TypeError(`install: ${file.to} is not an absolute path`);
      const content = file.content ?? (file.from !== undefined ? await readFile(file.from) : undefined);
      if (content === undefined) throw new TypeError(`install: ${file.to} needs from or content`);
      const mode = (file.mode ?? 0o644).toString(8);
      const result = await this.exec(
        ['/bin/sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat >"$1" && chmod -- "$2" "$1"', 'install', file.to, mode],
        { input: content },
      );
      if (result.code !== 0) throw new Error(`install: cannot write ${file.to} inside the sandbox: ${result.stderr}`);
    }
  }

  /** Writes unit files into /etc/systemd/system inside (a tmpfs there) and reloads systemd. */
  async installUnits(units: Record<string, string>): Promise<void> {
    for (const name of Object.keys(units)) {
      if (!UNIT_NAME.test(name)) throw new TypeError(`installUnits: ${name} is not a unit file name`);
    }
    await this.install(Object.entries(units).map(([name, content]) => ({ to: `/etc/systemd/system/${name}`, content })));
    const reload = await this.systemctl('daemon-reload');
    if (reload.code !== 0) throw new Error(`systemctl daemon-reload failed: ${reload.stderr}`);
  }

  /** `systemctl ARGS…` inside, as root. */
  systemctl(...args: string[]): Promise<ExecResult> {
    return this.exec(['systemctl', '--no-pager', ...args]);
  }

  /**
   * Starts a long-running transient service running argv as the client account (Type=exec, so it
   * resolves once argv was executed). mainPid is inside the sandbox's pid namespace (what systemd
   * and peer credentials inside report); hostPid is the same process seen from the host.
   */
  async startClientService(unit: string, argv: string[]): Promise<{ mainPid: number; controlGroup: string; hostPid: number }> {
    if (!UNIT_NAME.test(unit) || !unit.endsWith('.service')) throw new TypeError(`startClientService: ${unit} is not a service name`);
    const run = await this.exec([
      'systemd-run',
      '--quiet',
      `--unit=${unit}`,
      '--service-type=exec',
      `--uid=${this.client.user}`,
      `--gid=${this.client.group}`,
      // The agent alone holds the socket's group (the installer's drop-in does this on a host).
      `--property=SupplementaryGroups=${SOCKET_GROUP.name}`,
      `--working-directory=${this.client.home}`,
      '--',
      ...argv,
    ]);
    if (run.code !== 0) {
      throw new SandboxError('SANDBOX_SERVICE_FAILED', `cannot start ${unit}: ${run.stderr}\n${await this.journal(unit)}`);
    }
    const show = await this.systemctl('show', '--property=ActiveState,MainPID,ControlGroup', unit);
    const props = Object.fromEntries(show.stdout.split('\n').filter(Boolean).map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]));
    const mainPid = Number(props.MainPID);
    const hostPid = mainPid > 0 ? hostPidOf(this.pidNamespace, mainPid) : undefined;
    if (props.ActiveState !== 'active' || !(mainPid > 0) || hostPid === undefined) {
      throw new SandboxError('SANDBOX_SERVICE_FAILED', `${unit} is not running: ${show.stdout}\n${await this.journal(unit)}`);
    }
    return { mainPid, controlGroup: props.ControlGroup ?? '', hostPid };
  }

  /** The journal: whole (`-o short`) or one unit's output only (`-o cat`). Flushed first so nothing received is missing. */
  async journal(unit?: string): Promise<string> {
    await this.exec(['journalctl', '--sync']);
    const args = unit ? ['-o', 'cat', '-u', unit] : ['-o', 'short'];
    const result = await this.exec(['journalctl', '--no-pager', '--quiet', ...args]);
    return result.stdout;
  }

  /** Everything PID 1 wrote to its console and the first stage printed. */
  bootLog(): string {
    return this.#parts.log.text;
  }

  /** Stops systemd, removes the cgroup and temp dirs, then runs the host check (throws on any difference). Idempotent. */
  stop(): Promise<void> {
    this.#stopping ??= this.#parts.teardown();
    return this.#stopping;
  }
}
