// The one raw client is support/frame-client.ts's RawClient; this name stays until the worker suites
// that use it (early-started, finishing-report) import RawClient itself. It grants no credit, as before.
import { RawClient } from './support/frame-client.ts';

export class FrameClient extends RawClient {
  constructor(fd: number, version = 1) {
    super(fd, version, { autoCredit: false });
  }
}
