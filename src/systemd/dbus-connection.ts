// One D-Bus connection to systemd: fd passing asserted, every call bounded by a timeout, counted
// match rules and our own dispatch of the few systemd signals we use. The only user of dbus-next.
import { constants as osConstants } from 'node:os';
import dbus, { type Message, type MessageBus, type Variant } from 'dbus-next';
import { marshallMessage, messageToJsFmt } from 'dbus-next/lib/marshall-compat.js';
import { unmarshall } from 'dbus-next/lib/message.js';
import { openMessageBus } from './bus-wire.ts';
import { SystemdError } from './errors.ts';
import type { PropertyTuple } from './unit-limits.ts';

export const DEFAULT_SYSTEM_BUS_ADDRESS = 'unix:path=/run/dbus/system_bus_socket';
export const SYSTEMD_BUS_NAME = 'org.freedesktop.systemd1';
export const MANAGER_PATH = '/org/freedesktop/systemd1';
export const MANAGER_INTERFACE = 'org.freedesktop.systemd1.Manager';
const PROPERTIES_INTERFACE = 'org.freedesktop.DBus.Properties';
const UNIT_PATH_PREFIX = '/org/freedesktop/systemd1/unit/';
const DEFAULT_CALL_TIMEOUT_MS = 10_000;
const BUS_DRIVER = 'org.freedesktop.DBus';
/** The bus driver's word on who owns systemd's name: after a re-exec PID 1 reconnects under a new unique name. */
const SYSTEMD_OWNER_RULE = `type='signal',sender='${BUS_DRIVER}',path='/org/freedesktop/DBus',interface='${BUS_DRIVER}',member='NameOwnerChanged',arg0='${SYSTEMD_BUS_NAME}'`;

/** The systemd signals we act on, already unpacked (Variants unwrapped). */
export type SystemdSignal =
  | { kind: 'properties-changed'; path: string; interface: string; changed: Record<string, unknown>; invalidated: string[] }
  | { kind: 'job-removed'; id: number; job: string; unit: string; result: string }
  | { kind: 'unit-removed'; unit: string; path: string }
  /** systemd took its bus name again under a new connection (daemon-reexec): signals sent meanwhile
   * are lost, so whatever a watch knows from them is to be read again. */
  | { kind: 'systemd-reconnected'; owner: string };

export interface CallSpec {
  path: string;
  interface: string;
  member: string;
  signature?: string;
  body?: unknown[];
  /** Defaults to systemd. */
  destination?: string;
}

export interface OpenOptions {
  /** Deadline of each call without its own; also bounds connecting. */
  timeoutMs?: number;
}

/** Fields of dbus-next we rely on that its typings do not declare (lib/bus.js, lib/connection.js). */
interface BusInternals {
  _connection: {
    stream: { supportsUnixFd?: boolean; on(event: string, listener: () => void): void; destroy(error?: Error): void };
    on(event: string, listener: () => void): void;
  };
  _methodReturnHandlers: Record<number, unknown>;
}

/** dbus-next hands Variants back for `v`; our callers want plain values. */
export function unwrapVariants(value: unknown): unknown {
  if (value instanceof dbus.Variant) return unwrapVariants(value.value);
  if (Array.isArray(value)) return value.map(unwrapVariants);
  if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, unwrapVariants(inner)]));
  }
  return value;
}

/** Property tuples as StartTransientUnit's `a(sv)`: Variants are made here, at the edge. */
export function toVariantProperties(tuples: readonly PropertyTuple[]): Array<[string, Variant]> {
  return tuples.map(([name, signature, value]) => [name, new dbus.Variant(signature, value)]);
}

/** Linux errno values Node's os.constants.errno lacks (asm-generic/errno.h). */
const MORE_ERRNOS: Record<number, string> = { 109: 'ETOOMANYREFS' };

/** The addon's errors (and usocket's, once) may name the errno by number only (libuv has no name for ETOOMANYREFS). */
export function describeSocketError(error: Error): string {
  const { code, errno, syscall } = error as { code?: unknown; errno?: unknown; syscall?: unknown };
  const number = typeof errno === 'number' ? Math.abs(errno) : undefined;
  const known = Object.entries(osConstants.errno).find(([, value]) => value === number)?.[0];
  const name = typeof code === 'string' && code ? code : (known ?? (number === undefined ? undefined : (MORE_ERRNOS[number] ?? `errno ${number}`)));
  const call = typeof syscall === 'string' ? syscall : undefined;
  return name || call ? [call, name].filter(Boolean).join(' ') : error.message;
}

function timeout(what: string, ms: number): SystemdError {
  return new SystemdError('DBUS_TIMEOUT', `${what}: no reply within ${ms} ms`);
}

export class DbusConnection {
  #bus: MessageBus;
  #timeoutMs: number;
  #systemdOwner = '';
  /** The driver's NameOwnerChanged was heard: its word is newer than any answer to GetNameOwner read after it. */
  #ownerHeard = false;
  #listeners = new Set<(signal: SystemdSignal) => void>();
  #closeListeners = new Set<(error: SystemdError) => void>();
  /** Rejecters of calls in flight, so a lost connection fails them at once rather than at their timeout. */
  #pending = new Set<(error: SystemdError) => void>();
  #closed: SystemdError | undefined;
  /** Match rules in force, with how many users each has (dbus-next never removes rules itself). */
  #matches = new Map<string, { users: number; added: Promise<void> }>();

  private constructor(bus: MessageBus, timeoutMs: number) {
    this.#bus = bus;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Connects, asserts fd passing and learns systemd's unique name. The bus runs over our own
   * socket (bus-wire.ts, bus-socket.ts), which passes fds on every Node the package claims.
   */
  static async open(address: string = DEFAULT_SYSTEM_BUS_ADDRESS, options: OpenOptions = {}): Promise<DbusConnection> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    let bus: MessageBus;
    try {
      bus = openMessageBus(address);
    } catch (cause) {
      throw new SystemdError('DBUS_CONNECT_FAILED', `cannot connect to ${address}`, { cause });
    }
    const connection = new DbusConnection(bus, timeoutMs);
    connection.#watchDestroy();
    try {
      await connection.#handshake(address);
      // Without fd passing a call carrying an fd is never answered; refuse the connection instead.
      const internals = bus as unknown as BusInternals;
      if (internals._connection.stream.supportsUnixFd !== true) {
        throw new SystemdError('DBUS_NO_FD_PASSING', `the bus at ${address} did not agree to pass file descriptors`);
      }
      // Anyone on the bus may send us a directed signal; only ones from systemd's own connection count.
      // Its owner changes when systemd re-executes (systemctl daemon-reexec, run by its package's
      // upgrade): the driver's NameOwnerChanged says so, and the rule is in force before the question.
      // Both in flight at once: the bus handles them in order, and a refused rule (its match quota)
      // fails the connection here instead of leaving a re-exec unseen.
      const ownerRule = connection.addMatch(SYSTEMD_OWNER_RULE);
      const ownerCall = connection.call({
        destination: 'org.freedesktop.DBus',
        path: '/org/freedesktop/DBus',
        interface: 'org.freedesktop.DBus',
        member: 'GetNameOwner',
        signature: 's',
        body: [SYSTEMD_BUS_NAME],
      });
      const [[owner]] = await Promise.all([ownerCall, ownerRule]);
      // A NameOwnerChanged parsed in the same read as the answer runs before this line: it is newer.
      if (!connection.#ownerHeard) connection.#systemdOwner = String(owner);
    } catch (error) {
      connection.close();
      throw error;
    }
    return connection;
  }

  /**
   * usocket's stream (the one used before bus-socket.ts) replaced destroy() with its own, which closed the socket and emitted nothing. Node's
   * stream calls it when a write fails (sendmsg ETOOMANYREFS for the descriptors of a start, EPIPE…),
   * so the socket was gone with no 'error' or 'close': every call waited out its timeout and a unit's
   * watch waited forever, on a connection everyone took for live. Its destroy() is the one sure sign.
   */
  #watchDestroy(): void {
    const stream = (this.#bus as unknown as BusInternals)._connection.stream;
    const destroy = stream.destroy;
    stream.destroy = (error?: Error) => {
      destroy.call(stream, error);
      this.#markClosed(new SystemdError('DBUS_CLOSED', `D-Bus socket ${error ? `failed: ${describeSocketError(error)}` : 'closed'}`, { cause: error }));
    };
  }

  #handshake(address: string): Promise<void> {
    const bus = this.#bus;
    const internals = bus as unknown as BusInternals;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(timeout(`connecting to ${address}`, this.#timeoutMs)), this.#timeoutMs);
      const fail = (error: SystemdError): void => {
        clearTimeout(timer);
        reject(error);
      };
      bus.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      // Before 'connect' an error is a failed connect; after it, the connection is lost.
      bus.on('error', (cause: unknown) => {
        const error = new SystemdError('DBUS_CONNECT_FAILED', `D-Bus connection to ${address} failed`, { cause });
        fail(error);
        this.#markClosed(new SystemdError('DBUS_CLOSED', 'D-Bus connection failed', { cause }));
      });
      internals._connection.on('end', () => this.#markClosed(new SystemdError('DBUS_CLOSED', 'D-Bus connection closed by the bus')));
      // 'end' waits for the reader to drain; the socket's own close does not (a bus restart).
      internals._connection.stream.on('close', () => this.#markClosed(new SystemdError('DBUS_CLOSED', 'D-Bus socket closed')));
      bus.on('message', (message) => this.#dispatch(message));
    });
  }

  /** Sends a method call and resolves with the reply body; a D-Bus error becomes code 'DBUS_ERROR'. */
  call(spec: CallSpec, timeoutMs: number = this.#timeoutMs): Promise<unknown[]> {
    if (this.#closed) return Promise.reject(this.#closed);
    const message = new dbus.Message({
      destination: spec.destination ?? SYSTEMD_BUS_NAME,
      path: spec.path,
      interface: spec.interface,
      member: spec.member,
      signature: spec.signature ?? '',
      body: spec.body ?? [],
    });
    const what = `${spec.interface}.${spec.member}`;
    return new Promise<unknown[]>((resolve, reject) => {
      const settle = (error?: SystemdError, body?: unknown[]): void => {
        clearTimeout(timer);
        this.#pending.delete(abort);
        if (error) reject(error);
        else resolve(body ?? []);
      };
      const abort = (error: SystemdError): void => settle(error);
      const timer = setTimeout(() => {
        // dbus-next keeps a reply handler per serial forever; drop ours so a late reply is ignored.
        delete (this.#bus as unknown as BusInternals)._methodReturnHandlers[message.serial ?? -1];
        settle(timeout(what, timeoutMs));
      }, timeoutMs);
      this.#pending.add(abort);
      this.#bus.call(message).then(
        (reply) => settle(undefined, reply?.body ?? []),
        (cause: unknown) => {
          if (cause instanceof dbus.DBusError) {
            settle(new SystemdError('DBUS_ERROR', `${what}: ${cause.text || cause.type}`, { dbusName: cause.type, cause }));
          } else {
            // Not an answer but a failed send ("stream is closed"): the connection is gone.
            const error = new SystemdError('DBUS_CLOSED', `${what}: ${String(cause)}`, { cause });
            settle(error);
            this.#markClosed(error);
          }
        },
      );
    });
  }

  /** Properties.Get, unwrapped. */
  async getProperty(path: string, iface: string, name: string, timeoutMs?: number): Promise<unknown> {
    const [value] = await this.call(
      { path, interface: PROPERTIES_INTERFACE, member: 'Get', signature: 'ss', body: [iface, name] },
      timeoutMs,
    );
    return unwrapVariants(value);
  }

  /**
   * Adds a match rule, or counts one more user of it. The bus handles a connection's messages in
   * order, so a call sent after this is answered, and its signals are sent, with the rule in force:
   * callers need not wait for the rule before their next call, only for its failure.
   */
  addMatch(rule: string): Promise<void> {
    const match = this.#matches.get(rule);
    if (match) {
      match.users += 1;
      return match.added;
    }
    const added = this.#busCall('AddMatch', rule).then(() => undefined);
    added.catch(() => undefined);
    this.#matches.set(rule, { users: 1, added });
    return added;
  }

  /** Drops one user of a rule; the last one removes it from the bus (no reply awaited). */
  removeMatch(rule: string): void {
    const match = this.#matches.get(rule);
    if (!match || --match.users > 0) return;
    this.#matches.delete(rule);
    if (!this.#closed) this.#busCall('RemoveMatch', rule).catch(() => undefined);
  }

  #busCall(member: string, rule: string): Promise<unknown[]> {
    return this.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member, signature: 's', body: [rule] });
  }

  /** Listens to systemd's signals; returns the function that stops listening. */
  onSignal(listener: (signal: SystemdSignal) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Called once when the connection is lost or closed. */
  onClose(listener: (error: SystemdError) => void): () => void {
    if (this.#closed) queueMicrotask(() => listener(this.#closed!));
    else this.#closeListeners.add(listener);
    return () => this.#closeListeners.delete(listener);
  }

  get closed(): boolean {
    return this.#closed !== undefined;
  }

  /** Ends the connection; systemd then drops our Subscribe and every AddRef we took. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#markClosed(new SystemdError('DBUS_CLOSED', 'D-Bus connection closed'));
  }

  #markClosed(error: SystemdError): void {
    if (this.#closed) return;
    this.#closed = error;
    // A lost connection still holds its socket until ended here (the bus's EOF alone does not close it).
    queueMicrotask(() => {
      try {
        this.#bus.disconnect();
      } catch {
        // Already torn down.
      }
    });
    for (const abort of [...this.#pending]) abort(error);
    for (const listener of [...this.#closeListeners]) listener(error);
    this.#closeListeners.clear();
    this.#listeners.clear();
  }

  #dispatch(message: Message): void {
    if (message.type !== dbus.MessageType.SIGNAL) return;
    if (message.sender === BUS_DRIVER) return this.#ownerChanged(message);
    if (!this.#systemdOwner || message.sender !== this.#systemdOwner) return;
    const signal = parseSignal(message);
    if (!signal) return;
    for (const listener of [...this.#listeners]) listener(signal);
  }

  /** NameOwnerChanged (s name, s old, s new) from the bus driver itself, which no other client can send as. */
  #ownerChanged(message: Message): void {
    if (message.path !== '/org/freedesktop/DBus' || message.interface !== BUS_DRIVER || message.member !== 'NameOwnerChanged' || message.signature !== 'sss') return;
    const [name, , owner] = (message.body as unknown[]).map(String);
    if (name !== SYSTEMD_BUS_NAME) return;
    this.#systemdOwner = owner ?? '';
    this.#ownerHeard = true;
    if (!this.#systemdOwner) return;
    const signal: SystemdSignal = { kind: 'systemd-reconnected', owner: this.#systemdOwner };
    for (const listener of [...this.#listeners]) listener(signal);
  }
}

/**
 * Runs the codec once over messages shaped like a session's (the StartTransientUnit call with these
 * properties, JobRemoved, PropertiesChanged, a Get reply), sending nothing. V8 compiles a function
 * the first time it runs; a spare worker runs this so a session's start does not pay for that.
 */
export function warmUpCodec(tuples: readonly PropertyTuple[]): void {
  // A fd-typed value ('h') needs a real fd to marshal; every other type is exercised.
  const properties = toVariantProperties(tuples.filter(([, signature]) => !signature.includes('h')));
  const unit = '/org/freedesktop/systemd1/unit/x_2eservice';
  const messages = [
    new dbus.Message({ serial: 1, destination: SYSTEMD_BUS_NAME, path: MANAGER_PATH, interface: MANAGER_INTERFACE, member: 'StartTransientUnit', signature: 'ssa(sv)a(sa(sv))', body: ['x.service', 'fail', properties, []] }),
    new dbus.Message({ type: dbus.MessageType.SIGNAL, serial: 2, path: MANAGER_PATH, interface: MANAGER_INTERFACE, member: 'JobRemoved', signature: 'uoss', body: [1, '/org/freedesktop/systemd1/job/1', 'x.service', 'done'] }),
    new dbus.Message({ type: dbus.MessageType.SIGNAL, serial: 3, path: unit, interface: PROPERTIES_INTERFACE, member: 'PropertiesChanged', signature: 'sa{sv}as', body: ['org.freedesktop.systemd1.Unit', { ActiveState: new dbus.Variant('s', 'active'), Job: new dbus.Variant('(uo)', [0, '/']) }, []] }),
    new dbus.Message({ type: dbus.MessageType.METHOD_RETURN, serial: 4, replySerial: 1 as unknown as string, signature: 'v', body: [new dbus.Variant('u', 1)] }),
  ];
  for (const message of messages) {
    const decoded = messageToJsFmt(unmarshall(marshallMessage(message)[0]));
    parseSignal(decoded);
    unwrapVariants(decoded.body);
  }
}

function parseSignal(message: Message): SystemdSignal | undefined {
  const body = message.body;
  if (message.interface === PROPERTIES_INTERFACE && message.member === 'PropertiesChanged') {
    if (!message.path.startsWith(UNIT_PATH_PREFIX) || message.signature !== 'sa{sv}as') return undefined;
    return {
      kind: 'properties-changed',
      path: message.path,
      interface: String(body[0]),
      changed: unwrapVariants(body[1]) as Record<string, unknown>,
      invalidated: (body[2] as string[]).map(String),
    };
  }
  if (message.interface !== MANAGER_INTERFACE || message.path !== MANAGER_PATH) return undefined;
  if (message.member === 'JobRemoved' && message.signature === 'uoss') {
    return { kind: 'job-removed', id: Number(body[0]), job: String(body[1]), unit: String(body[2]), result: String(body[3]) };
  }
  if (message.member === 'UnitRemoved' && message.signature === 'so') {
    return { kind: 'unit-removed', unit: String(body[0]), path: String(body[1]) };
  }
  return undefined;
}
