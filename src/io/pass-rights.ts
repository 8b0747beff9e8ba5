// Whether a Unix socket takes descriptors at all (SO_PASSRIGHTS, Linux 6.16). Off, a peer's sendmsg
// with SCM_RIGHTS fails with EPERM and nothing is ever queued or installed here: no descriptor whose
// close could hold us (a lingering TCP socket, a FUSE file), none for the kernel to release in our
// thread. Where the kernel lacks the option, descriptors are received and closed (fds.ts, peer-close.ts).
import { native } from '../native/index.ts';

/** Best effort: true when the kernel now enforces `allow`, false when it cannot (older kernel, not a Unix socket). */
export function passRights(fd: number, allow: boolean): boolean {
  try {
    return native().setPassRights(fd, allow);
  } catch {
    return false;
  }
}
