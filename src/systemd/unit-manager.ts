// Session units through systemd's Manager over D-Bus: start, wait for exit, signal, stop, list, inspect.
import {
  DbusConnection,
  MANAGER_INTERFACE,
  MANAGER_PATH,
  toVariantProperties,
  type OpenOptions,
} from './dbus-connection.ts';
import { ignoreDbusError, isUnitGone, signalNumber, SystemdError } from './errors.ts';
import { unitMatchRules } from './match-rules.ts';
import { unitObjectPath, validatePrefix, validateUnitName } from './unit-names.ts';
import { sessionUnitProperties, type SessionUnitSpec } from './unit-properties.ts';
import { programRan } from './start-outcome.ts';
import { readEach, readExit, readProperties, readReferenced, readServiceState, readSnapshot, SERVICE_INTERFACE, unitPath, type ServiceState } from './unit-state.ts';

export type { ServiceState } from './unit-state.ts';
import { unitPhase, watchUnit, type ExitStatus, type WatchOptions } from './unit-watch.ts';
import { precedesUnitSignal, UnitSignals } from './exit-from-signals.ts';
import { awaitJob } from './job-wait.ts';

export interface ManagerOptions extends OpenOptions {
  /** Deadline for a start job to finish; Type=exec jobs end once the helper has exec'd. */
  startTimeoutMs?: number;
}

export interface StartProgress {
  /** The helper was forked: its PID (ExecMainPID), before the start job's end. */
  forked?(mainPid: number): void;
}

export interface StartedSession {
  /** PID of the helper (ExecMainPID: still set when a fast program has already exited). */
  mainPid: number;
}

const DEFAULT_START_TIMEOUT_MS = 30_000;

function manager(member: string, signature: string, body: unknown[]) {
  return { path: MANAGER_PATH, interface: MANAGER_INTERFACE, member, signature, body };
}

export class UnitManager {
  #connection: DbusConnection;
  #startTimeoutMs: number;
  /** Signal subscriptions of the units this manager started, held until stopAndWait sees them gone. */
  #started = new Map<string, () => void>();
  /** What the change signals of those units said, fed from before each start (exit-from-signals.ts). */
  #signals = new Map<string, UnitSignals>();
  /** Units started here whose AddRef we still hold: loaded for sure, so read by path in one round trip. */
  #referenced = new Set<string>();
  /** Units of ours that waitForExit saw finished: a transient unit does not start again, so no stop job is needed. */
  #finished = new Set<string>();

  private constructor(connection: DbusConnection, startTimeoutMs: number) {
    this.#connection = connection;
    this.#startTimeoutMs = startTimeoutMs;
  }

  /** Connects and subscribes at once, so no unit we start later can change state unseen. */
  static async connect(address?: string, options: ManagerOptions = {}): Promise<UnitManager> {
    const connection = await DbusConnection.open(address, options);
    try {
      // Without Subscribe systemd emits no unit signals to us (org.freedesktop.systemd1(5)).
      await connection.call(manager('Subscribe', '', []));
    } catch (error) {
      connection.close();
      throw error;
    }
    return new UnitManager(connection, options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
  }

  /**
   * Starts the session unit and waits for its start job. On failure nothing is left behind and the
   * error (code 'UNIT_START_FAILED') carries the job result and, when systemd recorded one, the exit.
   * `progress.forked` hears the helper's PID as soon as systemd announces it (at the fork, before the
   * job ends), once, and only after the start was accepted: the unit is ours and referenced by then.
   * From then on the unit is the caller's to end (it may be running its session already): a job that
   * fails later is only reported, and nothing here stops it.
   */
  async startSession(name: string, spec: SessionUnitSpec, progress: StartProgress = {}): Promise<StartedSession> {
    validateUnitName(name);
    const properties = toVariantProperties(sessionUnitProperties(spec));
    // The unit's signals from now until stopAndWait sees it gone; the rules go out before the start.
    const subscribed = this.#subscribe(name);
    this.#started.get(name)?.();
    const signals = new UnitSignals(unitObjectPath(name));
    const stopFeeding = this.#connection.onSignal((signal) => void signals.feed(signal));
    this.#signals.set(name, signals);
    this.#started.set(name, () => {
      subscribed.release();
      stopFeeding();
      if (this.#signals.get(name) === signals) this.#signals.delete(name);
    });
    // Listen before asking, so the job's end cannot arrive before we look for it.
    let accepted = false;
    let forked: number | undefined;
    let told = false;
    const announce = () => {
      if (told || !accepted || forked === undefined || !progress.forked) return;
      told = true;
      progress.forked(forked);
    };
    const job = awaitJob(this.#connection, name, this.#startTimeoutMs, (pid) => {
      forked = pid;
      announce();
    });
    let jobPath: string;
    try {
      // Mode "fail": never replace or queue behind another job on a unit of the same name.
      const [[path]] = await Promise.all([
        this.#connection.call(manager('StartTransientUnit', 'ssa(sv)a(sa(sv))', [name, 'fail', properties, []])),
        subscribed.ready,
      ]);
      jobPath = String(path);
      this.#referenced.add(name);
      accepted = true;
      announce();
    } catch (error) {
      this.#unsubscribeStarted(name);
      job.cancel();
      if (error instanceof SystemdError && error.code === 'DBUS_ERROR') {
        throw new SystemdError('UNIT_START_FAILED', `${name}: ${error.message}`, { dbusName: error.dbusName, unit: name, cause: error });
      }
      throw error;
    }
    let result: string;
    try {
      result = await job.result(jobPath);
    } catch (error) {
      if (!told) await this.#discard(name);
      throw error;
    }
    if (result !== 'done') {
      const exit = await readExit(this.#connection, name).catch(() => undefined);
      // Type=exec: a program that exits at once can be reaped before PID 1 sees its exec, and the
      // job then ends "failed" although the program ran (start-outcome.ts says when).
      if (programRan(result, exit)) return { mainPid: job.mainPid() ?? (await this.#readMainPid(name)) };
      if (!told) await this.#discard(name);
      throw new SystemdError('UNIT_START_FAILED', `${name}: start job ended "${result}"`, { jobResult: result, exit, unit: name });
    }
    // Usually seen already (one round trip less); else read on the unit's own path, without GetUnit
    // first: it started and holds our AddRef, so it is loaded (a read on the path of an unknown unit
    // would load a stub).
    return { mainPid: job.mainPid() ?? (await this.#readMainPid(name)) };
  }

  async #readMainPid(name: string): Promise<number> {
    const [mainPid] = await readProperties(this.#connection, unitObjectPath(name), SERVICE_INTERFACE, ['ExecMainPID']);
    return Number(mainPid);
  }

  /** Adds the unit's match rules (unitMatchRules); `ready` rejects if the bus refused one. */
  #subscribe(name: string): { ready: Promise<void>; release: () => void } {
    const rules = unitMatchRules(name);
    const ready = Promise.all(rules.map((rule) => this.#connection.addMatch(rule))).then(() => undefined);
    ready.catch(() => undefined);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const rule of rules) this.#connection.removeMatch(rule);
    };
    return { ready, release };
  }

  #unsubscribeStarted(name: string): void {
    this.#started.get(name)?.();
    this.#started.delete(name);
  }

  /** Runs `watch` with the unit's signals subscribed; a refused rule fails it. */
  async #withSignals<T>(name: string, watch: () => Promise<T>): Promise<T> {
    const subscribed = this.#subscribe(name);
    try {
      const [value] = await Promise.all([watch(), subscribed.ready]);
      return value;
    } finally {
      subscribed.release();
    }
  }

  /** Best-effort removal after a failed start; the start error is what the caller needs to see. */
  async #discard(name: string): Promise<void> {
    await this.stopAndWait(name, this.#startTimeoutMs).catch(() => undefined);
  }

  /**
   * Resolves when the unit is inactive or failed with no job pending, with how its main process
   * ended. Every signal about the unit re-reads its state; unitPhase() alone decides.
   */
  waitForExit(name: string, options: WatchOptions = {}): Promise<ExitStatus> {
    validateUnitName(name);
    // A unit we started is known from its signals since before its start: no read after them, which
    // would queue behind PID 1's work on the unit (≈10 ms of a session's EXIT here), and none at first
    // while they say it runs.
    const signals = this.#referenced.has(name) ? this.#signals.get(name) : undefined;
    if (signals?.exit) {
      this.#finished.add(name);
      return Promise.resolve(signals.exit);
    }
    // Called after the signals' own listener has taken each signal (listeners run in the order added).
    const decide = signals && (() => {
      if (signals.exit) this.#finished.add(name);
      return signals.exit;
    });
    return this.#withSignals(name, () =>
      watchUnit(
        this.#connection,
        name,
        async () => {
          if (this.#referenced.has(name)) {
            const { snapshot, exit } = await readReferenced(this.#connection, name);
            if (unitPhase(snapshot) !== 'finished') return undefined;
            this.#finished.add(name);
            return exit;
          }
          const phase = unitPhase(await readSnapshot(this.#connection, name));
          if (phase === 'gone') throw new SystemdError('NO_SUCH_UNIT', `${name} is not loaded`, { unit: name });
          return phase === 'finished' ? readExit(this.#connection, name) : undefined;
        },
        { ...options, decide, ignore: signals && ((signal) => precedesUnitSignal(signal, signals.path)), known: signals?.running === true },
      ),
    );
  }

  /** Signals every process of the unit (KillUnit who="all"), or its main process alone ("main"); never
   * kill(pid) as root, the PID may be reused. */
  async kill(name: string, signal: number | NodeJS.Signals, who: 'all' | 'main' = 'all'): Promise<void> {
    validateUnitName(name);
    await this.#connection.call(manager('KillUnit', 'ssi', [name, who, signalNumber(signal)]));
  }

  /**
   * Stops the unit and resolves once no unit of that name is loaded: StopUnit (a unit already gone
   * is fine), then once it is finished ResetFailedUnit if it failed and drop our AddRef, so systemd
   * collects it (CollectMode=inactive-or-failed).
   */
  async stopAndWait(name: string, timeoutMs: number): Promise<void> {
    validateUnitName(name);
    try {
      await this.#withSignals(name, () => this.#stopAndWait(name, timeoutMs));
    } finally {
      this.#finished.delete(name);
    }
    this.#referenced.delete(name);
    this.#unsubscribeStarted(name);
  }

  async #stopAndWait(name: string, timeoutMs: number): Promise<void> {
    const started = Date.now();
    // A unit already seen finished is only released below: a stop job would be PID 1's work for nothing.
    if (!this.#finished.has(name)) {
      try {
        await this.#connection.call(manager('StopUnit', 'ss', [name, 'replace']), timeoutMs);
      } catch (error) {
        if (!isUnitGone(error)) throw error;
      }
    }
    let released = false;
    // Finished as its signals said, with no job since: released without reading it first.
    const settled = this.#finished.has(name) ? this.#signals.get(name)?.finalState : undefined;
    await watchUnit(
      this.#connection,
      name,
      async () => {
        const snapshot = settled && !released ? { loadState: 'loaded', activeState: settled, jobId: 0 } : await readSnapshot(this.#connection, name);
        const phase = unitPhase(snapshot);
        if (phase === 'gone') return true;
        if (phase === 'finished' && !released) {
          released = true;
          if (snapshot!.activeState === 'failed') await ignoreDbusError(this.#connection.call(manager('ResetFailedUnit', 's', [name])));
          // From here the unit may be collected: reads go by name again (before the call is sent).
          this.#referenced.delete(name);
          // NotReferenced when we never held a reference (a unit we did not start): nothing to drop.
          await ignoreDbusError(this.#connection.call(manager('UnrefUnit', 's', [name])));
          // Collection comes as UnitRemoved, which re-runs this check; read again in case it already happened.
          return unitPhase(await readSnapshot(this.#connection, name)) === 'gone' ? true : undefined;
        }
        return undefined;
      },
      { timeoutMs: Math.max(0, timeoutMs - (Date.now() - started)) },
    );
  }

  /** Loaded units whose names start with the prefix, for cleaning up after a crash. */
  async listUnitsByPrefix(prefix: string): Promise<string[]> {
    validatePrefix(prefix);
    const [units] = await this.#connection.call(manager('ListUnitsByPatterns', 'asas', [[], [`${prefix}*`]]));
    return (units as unknown[][]).map((row) => String(row[0]));
  }

  /** State of any service (e.g. the client's), to match a peer against its MainPID and cgroup. */
  async serviceState(unit: string): Promise<ServiceState> {
    validateUnitName(unit);
    return readServiceState(this.#connection, unit);
  }

  /** Takes a reference on the unit for this connection (RefUnit), so it stays loaded once finished. */
  async ref(name: string): Promise<void> {
    validateUnitName(name);
    await this.#connection.call(manager('RefUnit', 's', [name]));
  }

  /** Called once when the connection is lost or closed. */
  onClose(listener: (error: SystemdError) => void): () => void {
    return this.#connection.onClose(listener);
  }

  /**
   * Properties of a loaded unit by name, each read on its own so one systemd lacks (MemoryPeak before
   * 255) or one that fails leaves only that one unset. Undefined when the unit is not loaded.
   */
  async unitProperties(unit: string, names: { unit?: readonly string[]; service?: readonly string[] }): Promise<Record<string, unknown> | undefined> {
    validateUnitName(unit);
    // A unit we reference is loaded: read on its own path, without GetUnit's round trip first (see unitPath).
    const path = this.#referenced.has(unit) ? unitObjectPath(unit) : await unitPath(this.#connection, unit);
    return path === undefined ? undefined : readEach(this.#connection, path, names);
  }

  /** Closes the connection; systemd drops every reference it held. Idempotent. */
  close(): void {
    this.#connection.close();
  }
}
