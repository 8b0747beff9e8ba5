// The supervisor's private channels: broker↔worker messages and the worker↔session-helper channel.
export {
  BUS_ADDRESS_ENV,
  ControlDecoder,
  ControlError,
  MAX_BROKER_MESSAGE,
  WORKER_CONFIG_ENV,
  encodeControl,
  entryFacts,
  type BrokerMessage,
  type DescribedEntry,
  type EntryFacts,
  type KeptFacts,
  type KeptPeer,
  type PeerIdentity,
  type SessionPeer,
  type WorkerMessage,
} from './broker-worker.ts';
// The helper channel is re-exported whole: its own module says what it offers.
export * from './helper-channel.ts';
export { readControl, sendControl } from './worker-end.ts';
export { workerMessageFault } from './worker-message.ts';
