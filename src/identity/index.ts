// Who the peer is: its credentials and pidfd against the configured account, and the client service it must belong to.
export { ClientService, pidfdCgroupNow, type Look } from './client-service.ts';
export { CAP_SYS_PTRACE, effectiveCapabilities, pidfdHasCapability } from './peer-capabilities.ts';
export { credentialsMatch, peerPidfd, pidfdIdentity, ticksSinceBoot } from './peer-identity.ts';
export { recheckPeer } from './peer-recheck.ts';
export { type PeerIdentity } from './peer.ts';
