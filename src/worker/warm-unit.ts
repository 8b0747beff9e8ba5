// A spare worker's warm unit: a session unit started while the worker waits for its next connection,
// its helper (as the client's user) waiting on the control channel with nothing open (native/session
// warm.c). A START draws it with CLAIM; only a helper that answers CLAIMED in time gets the START's
// descriptors (LAUNCH), so one that was stopped or killed by its user costs a fallback to a fresh unit,
// never the client's connection. Drawn once: a unit that took a CLAIM is never offered again.
import { openSync, closeSync, constants } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { native, type FdWatcher } from '../native/index.ts';
import { closeQuietly, closeReceived, passRights } from '../io/index.ts';
import { WARM_CLAIMED, WARM_HELLO, encodeClaim } from '../control/index.ts';
import { unitStopWaitMs, type Config } from '../config/index.ts';
import { sessionIdOf, unitNameFor, type Units } from '../systemd/index.ts';
import { warmUnitSpec } from './warm-plan.ts';

export interface WarmDeps {
  manager: Units;
  config: Config;
  helperPath: string;
  log(message: string): void;
  /** Told the unit's name before it is asked for, and again with `retired` once it is gone (the broker's 'warm' message). */
  named(name: string, retired?: boolean): void;
  /** The worker's D-Bus connections so far: a unit started on an earlier one holds no reference of ours
   * on the current one, so a fast program's end could be collected before the watch reads it. */
  connection(): number;
}

/** A drawn warm unit: its helper answered CLAIM and waits for LAUNCH on `fd` (ours now). */
export interface WarmClaim {
  name: string;
  mainPid: number;
  fd: number;
  /** The HELLO read from the channel before the session's decoder held it (HelperLink.preface). */
  hello: Buffer;
}

type State = 'starting' | 'ready' | 'claiming' | 'claimed' | 'retired';

export class WarmUnit {
  readonly name: string;
  #deps: WarmDeps;
  #fd: number;
  #watcher: FdWatcher | undefined;
  #state: State = 'starting';
  #got = Buffer.alloc(0);
  #mainPid: number | undefined;
  #helloSeen = false;
  #answered: ((ok: boolean) => void) | undefined;
  #becameReady: (() => void) | undefined;
  #retired: Promise<void> | undefined;
  #connection: number;

  /** Asks for the unit now; never throws (a failure retires it, with a line saying why). */
  constructor(deps: WarmDeps) {
    this.#deps = deps;
    let name = unitNameFor(randomBytes(16), deps.config.unitPrefix);
    while (sessionIdOf(name, deps.config.unitPrefix) === undefined) name = unitNameFor(randomBytes(16), deps.config.unitPrefix);
    this.name = name;
    this.#connection = deps.connection();
    deps.named(name);
    const [workerEnd, helperEnd] = native().socketpair();
    this.#fd = workerEnd;
    passRights(workerEnd, false);
    let stdinFd = -1;
    let stdoutFd = -1;
    try {
      // Placeholders the helper closes: the START's directory and connection come with LAUNCH.
      stdinFd = openSync('/', constants.O_RDONLY | constants.O_DIRECTORY);
      stdoutFd = openSync('/dev/null', constants.O_WRONLY);
      this.#watcher = native().watch(workerEnd, { readable: true }, () => this.#read());
      const job = deps.manager.startSession(name, { ...warmUnitSpec(deps.config, deps.helperPath), cwdFd: stdinFd, stdoutFd, stderrFd: helperEnd });
      const release = () => [stdinFd, stdoutFd, helperEnd].forEach(closeQuietly);
      job.then(
        (started) => {
          release();
          this.#mainPid = started.mainPid;
          this.#check();
        },
        (error: Error) => {
          release();
          this.#broken(`its start failed: ${error.message}`);
        },
      );
    } catch (error) {
      for (const fd of [stdinFd, stdoutFd, helperEnd]) if (fd >= 0) closeSync(fd);
      this.#broken(`it could not be asked for: ${(error as Error).message}`);
    }
  }

  /** Not retired nor drawn: it is, or is about to be, ready. */
  get usable(): boolean {
    return this.#state === 'starting' || this.#state === 'ready';
  }

  /** Its helper runs and waits: a START may draw it now. */
  get ready(): boolean {
    return this.#state === 'ready';
  }

  /**
   * Draws the unit for a START: CLAIM, and CLAIMED back within `timeoutMs`. Undefined when it is not
   * ready or did not answer: it is then retired (stopped in the background) and the START starts a
   * fresh unit, as it would with no warm unit at all.
   */
  async claim(timeoutMs: number): Promise<WarmClaim | undefined> {
    // Still starting (a START right after the last session): its start is under way already and ends
    // sooner than a fresh one would, so it is waited for, within the same bound.
    const began = performance.now();
    if (this.#state === 'starting') {
      let waited: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((resolve) => (this.#becameReady = resolve)), new Promise<void>((resolve) => (waited = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(waited);
    }
    if (this.#state !== 'ready') {
      void this.retire(this.#state === 'starting' ? `it was not ready within ${timeoutMs} ms` : undefined);
      return undefined;
    }
    if (this.#deps.connection() !== this.#connection) {
      void this.retire('it was started on a D-Bus connection since lost');
      return undefined;
    }
    timeoutMs = Math.max(1, timeoutMs - (performance.now() - began));
    this.#state = 'claiming';
    const answered = new Promise<boolean>((resolve) => (this.#answered = resolve));
    let sent = false;
    try {
      const claim = encodeClaim();
      sent = native().sendmsg(this.#fd, claim, 0, claim.length) === claim.length;
    } catch {}
    if (!sent) {
      void this.retire('its channel is gone');
      return undefined;
    }
    let timer: NodeJS.Timeout | undefined;
    const ok = await Promise.race([answered, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)))]);
    clearTimeout(timer);
    if (!ok || this.#state !== 'claiming') {
      void this.retire(`its helper did not answer CLAIM within ${timeoutMs} ms`);
      return undefined;
    }
    this.#state = 'claimed';
    this.#watcher?.close();
    this.#watcher = undefined;
    const fd = this.#fd;
    this.#fd = -1;
    return { name: this.name, mainPid: this.#mainPid!, fd, hello: WARM_HELLO };
  }

  /** Stops the unit (once) unless a START drew it; resolves when it is gone. */
  retire(why?: string): Promise<void> {
    if (this.#state === 'claimed') return Promise.resolve();
    if (this.#retired) return this.#retired;
    this.#state = 'retired';
    this.#answered?.(false);
    this.#becameReady?.();
    this.#watcher?.close();
    this.#watcher = undefined;
    closeQuietly(this.#fd);
    this.#fd = -1;
    if (why) this.#deps.log(`warm unit ${this.name} retired: ${why}`);
    this.#retired = this.#deps.manager
      .stopAndWait(this.name, unitStopWaitMs(this.#deps.config))
      .then(() => this.#deps.named(this.name, true))
      .catch((error: Error) => {
        // Left named: the broker stops it if this worker dies, as it would any unit of its.
        this.#deps.log(`warm unit ${this.name}: stopping it failed: ${error.message}`);
      });
    return this.#retired;
  }

  /** What the helper sends before LAUNCH is fixed: HELLO, then CLAIMED once claimed. Anything else
   * (more, other bytes, a descriptor, the channel's end) and the unit is retired. */
  #read(): void {
    const buffer = Buffer.allocUnsafe(64);
    while (this.#fd >= 0) {
      let received;
      try {
        received = native().recvmsg(this.#fd, buffer, 0, buffer.length, 1);
      } catch (error) {
        return this.#broken(`its channel failed: ${(error as Error).message}`);
      }
      if (received === null) return;
      if (received.fds.length > 0 || received.controlTruncated || received.foreignControl) {
        closeReceived(received.fds);
        return this.#broken('its helper sent a descriptor');
      }
      if (received.bytes === 0) return this.#broken('its helper ended');
      this.#got = Buffer.concat([this.#got, buffer.subarray(0, received.bytes)]);
      const expected = this.#state === 'claiming' ? Buffer.concat([WARM_HELLO, WARM_CLAIMED]) : WARM_HELLO;
      if (this.#got.length > expected.length || !expected.subarray(0, this.#got.length).equals(this.#got)) return this.#broken('its helper sent what a warm helper never sends');
      if (this.#got.length === WARM_HELLO.length) this.#helloSeen = true;
      if (this.#state === 'claiming' && this.#got.length === expected.length) this.#answered?.(true);
      this.#check();
    }
  }

  #check(): void {
    if (this.#state === 'starting' && this.#helloSeen && this.#mainPid !== undefined) {
      this.#state = 'ready';
      this.#becameReady?.();
    }
  }

  #broken(why: string): void {
    if (this.#state === 'claimed' || this.#state === 'retired') return;
    void this.retire(why);
  }
}
