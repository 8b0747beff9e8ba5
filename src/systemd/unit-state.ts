// Reads of a unit's state over the bus: by name first (GetUnit never loads a unit), then its properties.
import { MANAGER_INTERFACE, MANAGER_PATH, type DbusConnection } from './dbus-connection.ts';
import { isUnitGone, SystemdError } from './errors.ts';
import { unitObjectPath } from './unit-names.ts';
import type { ExitStatus, UnitSnapshot } from './unit-watch.ts';

export const UNIT_INTERFACE = 'org.freedesktop.systemd1.Unit';
export const SERVICE_INTERFACE = 'org.freedesktop.systemd1.Service';

/**
 * The unit's object path, or undefined when it is not loaded. GetUnit rather than a property read on
 * the computed path: systemd loads a unit named by an object path it does not know, leaving a stub.
 */
export async function unitPath(connection: DbusConnection, name: string): Promise<string | undefined> {
  try {
    const [path] = await connection.call({
      path: MANAGER_PATH,
      interface: MANAGER_INTERFACE,
      member: 'GetUnit',
      signature: 's',
      body: [name],
    });
    return String(path);
  } catch (error) {
    if (isUnitGone(error)) return undefined;
    throw error;
  }
}

/** Reads properties of one interface in parallel (each Get is one small reply; GetAll of a service is ~250). */
export async function readProperties(
  connection: DbusConnection,
  path: string,
  iface: string,
  names: readonly string[],
): Promise<unknown[]> {
  return Promise.all(names.map((name) => connection.getProperty(path, iface, name)));
}

/** What unitPhase() needs, or undefined when the unit is not loaded (or went away while we read). */
export async function readSnapshot(connection: DbusConnection, name: string): Promise<UnitSnapshot | undefined> {
  const path = await unitPath(connection, name);
  if (path === undefined) return undefined;
  try {
    const [loadState, activeState, job] = await readProperties(connection, path, UNIT_INTERFACE, ['LoadState', 'ActiveState', 'Job']);
    // Job is "(uo)": the pending job's id and path, id 0 when there is none.
    const jobId = Array.isArray(job) ? Number(job[0]) : 0;
    return { loadState: String(loadState), activeState: String(activeState), jobId };
  } catch (error) {
    if (isUnitGone(error)) return undefined;
    throw error;
  }
}

/** ExecMainCode, ExecMainStatus and Result of a loaded service. */
export async function readExit(connection: DbusConnection, name: string): Promise<ExitStatus> {
  const path = await unitPath(connection, name);
  if (path === undefined) throw new SystemdError('NO_SUCH_UNIT', `${name} is not loaded`, { unit: name });
  const [code, status, result] = await readProperties(connection, path, SERVICE_INTERFACE, ['ExecMainCode', 'ExecMainStatus', 'Result']);
  return { code: Number(code), status: Number(status), result: String(result) };
}

/**
 * Snapshot and exit status in one round trip, read on the unit's own path without GetUnit: only for
 * a unit we hold a reference on (AddRef), which stays loaded until we drop it (see unitPath).
 */
export async function readReferenced(connection: DbusConnection, name: string): Promise<{ snapshot: UnitSnapshot; exit: ExitStatus }> {
  const path = unitObjectPath(name);
  const [[loadState, activeState, job], [code, status, result]] = await Promise.all([
    readProperties(connection, path, UNIT_INTERFACE, ['LoadState', 'ActiveState', 'Job']),
    readProperties(connection, path, SERVICE_INTERFACE, ['ExecMainCode', 'ExecMainStatus', 'Result']),
  ]);
  const jobId = Array.isArray(job) ? Number(job[0]) : 0;
  return {
    snapshot: { loadState: String(loadState), activeState: String(activeState), jobId },
    exit: { code: Number(code), status: Number(status), result: String(result) },
  };
}

export interface ServiceState {
  activeState: string;
  subState: string;
  mainPid: number;
  controlGroup: string;
  invocationId: Buffer;
}

/** State of a loaded service by name (any service: the client's, to match a peer against its MainPID and cgroup). */
export async function readServiceState(connection: DbusConnection, unit: string): Promise<ServiceState> {
  const path = await unitPath(connection, unit);
  if (path === undefined) throw new SystemdError('NO_SUCH_UNIT', `${unit} is not loaded`, { unit });
  const [[activeState, subState, invocationId], [mainPid, controlGroup]] = await Promise.all([
    readProperties(connection, path, UNIT_INTERFACE, ['ActiveState', 'SubState', 'InvocationID']),
    readProperties(connection, path, SERVICE_INTERFACE, ['MainPID', 'ControlGroup']),
  ]);
  return {
    activeState: String(activeState),
    subState: String(subState),
    mainPid: Number(mainPid),
    controlGroup: String(controlGroup),
    invocationId: Buffer.from(invocationId as Buffer),
  };
}

/** Properties at `path`, each read on its own, so one that fails (or that this systemd lacks) leaves only that one unset. */
export async function readEach(connection: DbusConnection, path: string, names: { unit?: readonly string[]; service?: readonly string[] }): Promise<Record<string, unknown>> {
  const values: Record<string, unknown> = {};
  const read = (iface: string, name: string) =>
    connection.getProperty(path, iface, name).then(
      (value) => void (values[name] = value),
      () => undefined,
    );
  await Promise.all([...(names.unit ?? []).map((n) => read(UNIT_INTERFACE, n)), ...(names.service ?? []).map((n) => read(SERVICE_INTERFACE, n))]);
  return values;
}
