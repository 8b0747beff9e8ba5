// Dialect 5's messages (native/session/warm.c): a warm helper waits, started, for CLAIM; its CLAIMED says
// it runs and reads its channel; LAUNCH then carries what a fresh unit's helper gets in its argv, with
// the START directory and the client connection riding on its first byte.
import { HELPER_DIALECT, HelperChannelError, HelperLimits, HelperMessageType } from './helper-channel-core.ts';

export function encodeClaim(): Buffer {
  return Buffer.from([HelperMessageType.CLAIM, 0, 0, 0, 0]);
}

/** LAUNCH: each argument and a NUL, as execve(2) lays out an argv; none may hold a NUL. */
export function encodeLaunch(args: readonly string[]): Buffer {
  if (args.length === 0 || args.length > HelperLimits.MAX_LAUNCH_ARGS) throw new HelperChannelError(`LAUNCH with ${args.length} arguments`);
  const parts = args.map((arg) => {
    if (arg.includes('\0')) throw new HelperChannelError('a LAUNCH argument holds a NUL');
    return Buffer.from(`${arg}\0`, 'utf8');
  });
  const payload = Buffer.concat(parts);
  if (payload.length > HelperLimits.MAX_LAUNCH_PAYLOAD) throw new HelperChannelError(`LAUNCH of ${payload.length} bytes exceeds ${HelperLimits.MAX_LAUNCH_PAYLOAD}`);
  const header = Buffer.alloc(HelperLimits.HEADER_SIZE);
  header[0] = HelperMessageType.LAUNCH;
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** What a warm helper sends before LAUNCH, in order: HELLO (its dialect) at its start, CLAIMED after CLAIM. */
export const WARM_HELLO = Buffer.from([HelperMessageType.HELLO, 0, 0, 0, 2, HELPER_DIALECT >> 8, HELPER_DIALECT & 0xff]);
export const WARM_CLAIMED = Buffer.from([HelperMessageType.CLAIMED, 0, 0, 0, 0]);
