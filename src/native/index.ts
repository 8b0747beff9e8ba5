// The native addon's door: its one typed loader.
export { native, type FdWatcher, type NativeBinding, type PeerCredentials, type PollEvents } from './binding.ts';
