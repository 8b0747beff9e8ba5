// A session unit's end as the worker drives it: watched until inactive, stopped at most once (after
// STOP's signal steps when the client asks), its figures taken while its cgroup still exists. Its
// end is told once, to `inactive` (the session's state machine takes it from there).
import { HANG_UP_GRACE_MS, unitStopWaitMs, type Config } from '../config/index.ts';
import type { Units, ExitStatus } from '../systemd/index.ts';
import { readSessionFigures, type SessionFigures } from './accounting.ts';

export interface UnitStopDeps {
  manager: Units;
  config: Config;
  log(message: string): void;
  /** The unit is inactive (with its exit when systemd recorded it) or gone: by itself, or by our stop. */
  inactive?(exit: ExitStatus | undefined): void;
  /** The watch failed for another reason than our own stop. */
  watchLost?(error: Error): void;
}

export class UnitStop {
  #deps: UnitStopDeps;
  #name: string | undefined;
  /** The unit's figures, read before a stop of ours (MemoryCurrent goes with the cgroup). */
  #figures: Promise<SessionFigures> | undefined;
  #stopped: Promise<void> | undefined;
  #timers: NodeJS.Timeout[] = [];
  #told = false;
  /** expire() ran: the unit's end is told as systemd tells a RuntimeMaxSec= stop, result `timeout`. */
  #expired = false;

  constructor(deps: UnitStopDeps) {
    this.#deps = deps;
  }

  get name(): string | undefined {
    return this.#name;
  }

  /** A stop of ours has begun. */
  get stopped(): boolean {
    return this.#stopped !== undefined;
  }

  /** The unit's name, once chosen (before it is started). */
  named(name: string): void {
    this.#name = name;
  }

  /** Watches the started unit. AddRef keeps the unit loaded after a fast exit, so this sees it even if
   * it already happened. */
  watch(referenced = true): void {
    // A unit we did not start (an adopted kept session's) holds no reference of ours: taken first, or
    // systemd collects it at its end before its exit can be read (CollectMode=inactive-or-failed).
    const { manager } = this.#deps;
    const name = this.#name!;
    const exit = referenced || !manager.ref ? manager.waitForExit(name) : manager.ref(name).then(() => manager.waitForExit(name));
    exit.then(
      (exit) => this.#inactive(exit),
      (error: Error) => {
        if (!this.#stopped) this.#deps.watchLost?.(error); // our own stop collected the unit: stop() tells the end
      },
    );
  }

  /** The watch and our stop both see the end; whichever comes first tells it. */
  #inactive(exit: ExitStatus | undefined): void {
    if (this.#told) return;
    this.#told = true;
    this.#deps.inactive?.(this.#expired && exit ? { ...exit, result: 'timeout' } : exit);
  }

  /** systemd's figures, read once: before a stop of ours (while the cgroup still is, so MemoryCurrent
   * and TasksCurrent are there), else when first asked (after the unit's end: CPU and IO survive it). */
  figures(): Promise<SessionFigures> {
    return (this.#figures ??= readSessionFigures(this.#deps.manager, this.#name));
  }

  /** Stops the unit (once) and counts it done when it is gone. */
  stop(): Promise<void> {
    void this.figures();
    this.#stopped ??= this.#deps.manager.stopAndWait(this.#name!, unitStopWaitMs(this.#deps.config)).then(
      () => this.#inactive(undefined),
      (error: Error) => {
        this.#deps.log(`${this.#name}: stopping the session unit failed: ${error.message}`);
        this.#inactive(undefined);
      },
    );
    return this.#stopped;
  }

  /** STOP, node-pty's kill(): a hang-up first, alone. SIGHUP to the unit's main process, the helper,
   * which passes it on to the program's process group as a closing terminal would (native/session
   * relay.c), so a `trap … HUP` runs and an interactive bash ends at once; after HANG_UP_GRACE_MS,
   * SIGTERM and SIGHUP to every process of the unit (what the hang-up left: background jobs, nohup);
   * SIGKILL to all but the helper stopTimeoutSec later (`kill`: the helper does it, systemd 252's
   * KillUnit cannot spare it), and the unit's stop as the backstop after as long again. The helper
   * relays the last output, then reports "stop". Run once per session (its state machine's `stopping`).
   *
   * The order matters: readline keeps one pending signal (_rl_caught_signal), the later one wins, and an
   * interactive bash ignores SIGTERM. SIGHUP then SIGTERM at once left it alive until the KILL step;
   * SIGTERM then SIGHUP at once never let a `trap … HUP` run (SIGTERM ended the program first). The
   * hang-up alone, then the grace, gives both; the unit-wide step still sends SIGHUP last. */
  async stopSteps(kill: () => void): Promise<void> {
    const { manager, config } = this.#deps;
    const stepMs = config.session.stopTimeoutSec * 1000;
    this.later(HANG_UP_GRACE_MS, () => void this.#terminateAll());
    this.later(HANG_UP_GRACE_MS + stepMs, kill);
    this.later(HANG_UP_GRACE_MS + 2 * stepMs, () => void this.stop());
    try {
      await manager.kill(this.#name!, 'SIGHUP', 'main');
    } catch (error) {
      this.#deps.log(`${this.#name}: hanging up the session failed: ${(error as Error).message}`);
      void this.#terminateAll();
    }
  }

  /** A warm unit's wall clock ran out (warm-plan.ts warmWallClockMs): what systemd does at RuntimeMaxSec=,
   * SIGTERM and SIGHUP to every process (the helper passes the hang-up on, drains and reports), and the
   * unit's stop stopTimeoutSec later as the backstop; its end is told with result `timeout`, as
   * systemd's own (service.c SERVICE_FAILURE_TIMEOUT), so the client's EXIT is the same. */
  expire(): void {
    this.#expired = true;
    this.#deps.log(`${this.#name}: its wall clock (RuntimeMaxSec) ran out`);
    void this.#terminateAll();
    this.later(this.#deps.config.session.stopTimeoutSec * 1000, () => void this.stop());
  }

  /** SIGTERM, then SIGHUP, to every process of the unit, as systemd's own stop with SendSIGHUP= does. */
  async #terminateAll(): Promise<void> {
    try {
      await this.#deps.manager.kill(this.#name!, 'SIGTERM');
      await this.#deps.manager.kill(this.#name!, 'SIGHUP');
    } catch (error) {
      this.#deps.log(`${this.#name}: stopping the session's processes failed: ${(error as Error).message}`);
      void this.stop();
    }
  }

  later(ms: number, action: () => void): void {
    this.#timers.push(setTimeout(action, ms));
  }

  clearTimers(): void {
    for (const timer of this.#timers) clearTimeout(timer);
  }

  /** However the session ended, its unit is stopped and gone before it counts as ended. */
  async gone(): Promise<void> {
    if (this.#name) await this.#deps.manager.stopAndWait(this.#name, unitStopWaitMs(this.#deps.config));
  }
}
