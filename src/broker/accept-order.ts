// The order in which one batch of accepted connections is served (pure): the client service's
// MainPID first, then root (the operator), then everyone else in the order they connected.
//
// The accept queue is first in, first out (unix(7)): under a flood from another process of the agent's
// unit the agent's own connection sat behind thousands of the flood's, each costing the broker its
// checks and refusal before the agent's turn came (p99 753 ms against 65 ms, 907db9a). Accepting a
// batch with SO_PEERCRED only (microseconds each) finds the agent's connection at once; serving it
// first puts its checks, and every later step of its start, ahead of the batch's refusals.
import type { PeerCredentials } from '../native/index.ts';

export interface AcceptedConnection {
  fd: number;
  /** undefined when SO_PEERCRED failed (errno in `credentialsError`). */
  credentials: PeerCredentials | undefined;
  credentialsError?: number;
}

/** Decodes native acceptBatch's fd, pid, uid, gid quadruples (uid and gid as int32, pid -errno on failure). */
export function acceptedConnections(raw: Int32Array): AcceptedConnection[] {
  const out: AcceptedConnection[] = [];
  for (let at = 0; at + 3 < raw.length; at += 4) {
    const fd = raw[at]!;
    const pid = raw[at + 1]!;
    if (pid < 0) out.push({ fd, credentials: undefined, credentialsError: -pid });
    else out.push({ fd, credentials: { pid, uid: raw[at + 2]! >>> 0, gid: raw[at + 3]! >>> 0 } });
  }
  return out;
}

/** Whether `connection` comes from the MainPID by the service's latest known state (a hint: the
 * MainPID runs as the client account, so a PID equal to it under another uid is not it). */
export function fromMainPid(connection: AcceptedConnection, mainPid: number | undefined, clientUid: number): boolean {
  const credentials = connection.credentials;
  return mainPid !== undefined && credentials !== undefined && credentials.pid === mainPid && credentials.uid === clientUid;
}

/** Rank of a connection: 0 the MainPID (by the service's latest known state), 1 root, 2 anyone else. */
function rank(connection: AcceptedConnection, mainPid: number | undefined, clientUid: number): number {
  if (fromMainPid(connection, mainPid, clientUid)) return 0;
  if (connection.credentials?.uid === 0) return 1;
  return 2;
}

/**
 * The batch in serving order: by rank, and within a rank in arrival order (a stable order, so the
 * flood's own connections keep their queue order). `mainPid` is only a hint for the order: what the
 * connection is allowed is decided by the checks at accept as for any other (accept-gate.ts).
 */
export function serveOrder<T extends AcceptedConnection>(batch: readonly T[], mainPid: number | undefined, clientUid: number): T[] {
  const buckets: T[][] = [[], [], []];
  for (const connection of batch) buckets[rank(connection, mainPid, clientUid)]!.push(connection);
  return buckets.flat();
}
