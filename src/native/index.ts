// The native addon's door: its one typed loader.
export { native, noPrebuiltMessage, platformName, PREBUILT_GLIBC, PREBUILT_PLATFORMS, type FdWatcher, type NativeBinding, type PeerCredentials, type PollEvents } from './binding.ts';
