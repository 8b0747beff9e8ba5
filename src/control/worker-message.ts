// What the broker takes from a worker (pure): the worker is our own process, but a broken one must
// not be trusted to be sane. A message of the wrong shape, or one about a session while the worker
// has none (its 'finishing' or 'ended' would count for the next session's slot), is a fault.
import type { WorkerMessage } from './broker-worker.ts';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why `message` is not one the broker can act on now, or undefined when it is. `inSession`: a session
 * was handed to the worker and its 'ended' has not come yet. */
export function workerMessageFault(message: unknown, inSession: boolean): string | undefined {
  if (!isObject(message) || typeof message.type !== 'string') return 'a control message that is not an object with a type';
  const type = message.type as WorkerMessage['type'];
  switch (type) {
    case 'ready':
      return inSession ? "'ready' during a session" : undefined;
    case 'unit':
      if (typeof message.name !== 'string') return "'unit' without a name";
      break;
    case 'warm':
      // Named while idle (before 'ready') and retired at any time: not tied to a session.
      return typeof message.name === 'string' && (message.retired === undefined || typeof message.retired === 'boolean') ? undefined : "'warm' without a name";
    case 'started':
      if (!Number.isSafeInteger(message.mainPid) || (message.mainPid as number) < 1) return "'started' without a pid";
      break;
    case 'finishing':
    case 'keep-request':
      break;
    case 'kept': {
      const fault = keptFault(message);
      if (fault) return `'kept' ${fault}`;
      break;
    }
    case 'described':
      if (!Number.isSafeInteger(message.requestId) || !isObject(message.entry)) return "'described' without its request or entry";
      break;
    case 'kept-ended':
      if (!isObject(message.ended)) return "'kept-ended' without its record";
      break;
    case 'ended':
      if (typeof message.reason !== 'string' || (message.reusable !== undefined && typeof message.reusable !== 'boolean')) return "'ended' without its reason";
      break;
    default:
      return `an unknown control message ${JSON.stringify(String(message.type).slice(0, 40))}`;
  }
  return inSession ? undefined : `'${type}' with no session handed to it`;
}

const count = (value: unknown, max: number) => Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= max;

/** What LIST shows of a session its worker did not answer for: checked as the codec will encode it. */
function keptFault(message: Record<string, unknown>): string | undefined {
  if (!Number.isSafeInteger(message.sessionId) || (message.sessionId as number) < 1) return 'without a session id';
  for (const name of ['keepMs', 'programPid', 'mainPid'] as const) if (!count(message[name], 0xffff_ffff)) return `with a bad ${name}`;
  if (message.origin !== 1 && message.origin !== 2 && message.origin !== 3) return 'with a bad origin';
  for (const name of ['rows', 'cols'] as const) if (!count(message[name], 0xffff)) return `with a bad ${name}`;
  if (!count(message.startedAtMs, Number.MAX_SAFE_INTEGER)) return 'with a bad startedAtMs';
  for (const name of ['label', 'program', 'cwd'] as const) if (typeof message[name] !== 'string') return `without its ${name}`;
  return undefined;
}
