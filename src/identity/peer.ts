// Who a connection's peer is, as the broker established it and hands it to the worker.
export interface PeerIdentity {
  pid: number;
  uid: number;
  gid: number;
  /** The peer's cgroup as the broker checked it; null in the weaker mode without a client unit. */
  cgroup: string | null;
}
