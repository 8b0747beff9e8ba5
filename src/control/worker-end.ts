// The worker's end of the control channel: reads broker messages (with their fds), sends reports.
import { closeAll, type FdSocket } from '../io/index.ts';
import { ControlError, MAX_BROKER_MESSAGE, encodeControl, type BrokerMessage, type WorkerMessage } from './broker-worker.ts';

/** A session message carries the client connection and the peer's pidfd. */
const MAX_CONTROL_FDS = 2;

/** The messages that carry [connection, peer pidfd]; every other carries none. */
const CARRIES_FDS: ReadonlySet<BrokerMessage['type']> = new Set(['session', 'attach', 'stop-session']);

export interface ReceivedControl {
  message: BrokerMessage;
  fds: number[];
}

/** Reads one message frame-exact, so its fds can only come with its own bytes. */
export async function readControl(socket: FdSocket): Promise<ReceivedControl> {
  const fds: number[] = [];
  try {
    const header = await socket.readExact(4, MAX_CONTROL_FDS);
    fds.push(...header.fds);
    const length = header.data.readUInt32BE(0);
    if (length === 0 || length > MAX_BROKER_MESSAGE) throw new ControlError(`control message of ${length} bytes`);
    const body = await socket.readExact(length, MAX_CONTROL_FDS);
    fds.push(...body.fds);
    if (header.controlTruncated || body.controlTruncated) throw new ControlError('control message with too many fds');
    const message = JSON.parse(body.data.toString('utf8')) as BrokerMessage;
    if (CARRIES_FDS.has(message.type) ? fds.length !== 2 : fds.length !== 0) {
      throw new ControlError(`${message.type} message with ${fds.length} fds`);
    }
    return { message, fds };
  } catch (error) {
    closeAll(fds);
    throw error;
  }
}

export function sendControl(socket: FdSocket, message: WorkerMessage): void {
  if (!socket.closed) socket.write(encodeControl(message));
}
