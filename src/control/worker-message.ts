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
    case 'started':
      if (!Number.isSafeInteger(message.mainPid) || (message.mainPid as number) < 1) return "'started' without a pid";
      break;
    case 'finishing':
      break;
    case 'ended':
      if (typeof message.reason !== 'string' || (message.reusable !== undefined && typeof message.reusable !== 'boolean')) return "'ended' without its reason";
      break;
    default:
      return `an unknown control message ${JSON.stringify(String(message.type).slice(0, 40))}`;
  }
  return inSession ? undefined : `'${type}' with no session handed to it`;
}
