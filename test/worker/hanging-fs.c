// A FUSE file system whose getattr never answers, spoken on /dev/fuse with no library: for testing
// that a START descriptor on such a file system cannot freeze a worker.
//
// Usage: hanging-fs MOUNTPOINT, with fd 3 a Unix socket. Mounts in a mount namespace of its own (the
// host's mount table never sees it), opens and stats its root directory, detaches the mount (the
// descriptor keeps the file system alive) and sends that descriptor on fd 3. From then on it never answers
// a GETATTR, and prints "getattr" on stdout for each one it leaves hanging. It dies
// with its parent (PDEATHSIG); its death aborts the connection, failing whatever still waits on it.
// Layouts from the kernel's include/uapi/linux/fuse.h (protocol 7.31 is enough for these requests).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum { LOOKUP = 1, FORGET = 2, GETATTR = 3, INIT = 26, OPENDIR = 27, INTERRUPT = 36, BATCH_FORGET = 42 };

struct in_header { uint32_t len, opcode; uint64_t unique, nodeid; uint32_t uid, gid, pid; uint16_t extlen, pad; };
struct out_header { uint32_t len; int32_t error; uint64_t unique; };
struct init_out {
  uint32_t major, minor, max_readahead, flags;
  uint16_t max_background, congestion_threshold;
  uint32_t max_write, time_gran;
  uint16_t max_pages, map_alignment;
  uint32_t flags2, unused[7];
};
struct attr {
  uint64_t ino, size, blocks, atime, mtime, ctime;
  uint32_t atimensec, mtimensec, ctimensec, mode, nlink, uid, gid, rdev, blksize, flags;
};
struct attr_out { uint64_t attr_valid; uint32_t attr_valid_nsec, dummy; struct attr attr; };
struct open_out { uint64_t fh; uint32_t open_flags, pad; };

static int fuse_fd;
static const char *mountpoint;
static atomic_int opened;

static void die(const char *what) {
  fprintf(stderr, "hanging-fs: %s: %s\n", what, strerror(errno));
  _exit(1);
}

static void reply(uint64_t unique, int error, const void *body, size_t size) {
  struct out_header header = { (uint32_t)(sizeof header + size), -error, unique };
  struct iovec parts[2] = { { &header, sizeof header }, { (void *)body, size } };
  // ENOENT: the request was interrupted meanwhile; nothing to do.
  if (writev(fuse_fd, parts, body ? 2 : 1) < 0 && errno != ENOENT) die("write /dev/fuse");
}

// Opens and stats the root (answered by the loop), detaches the mount, and sends the fd on fd 3 with
// the device and inode numbers (two native-endian u64) that a client would put in START.
static void *open_root(void *unused) {
  (void)unused;
  int dir = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (dir < 0 || fstat(dir, &st) < 0) die("open the mount");
  atomic_store(&opened, 1);
  if (umount2(mountpoint, MNT_DETACH) < 0) die("umount2");
  uint64_t ids[2] = { st.st_dev, st.st_ino };  // what a client puts in START for this directory
  struct iovec iov = { ids, sizeof ids };
  union { struct cmsghdr align; char space[CMSG_SPACE(sizeof(int))]; } control;
  struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space };
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &dir, sizeof dir);
  if (sendmsg(3, &message, MSG_NOSIGNAL) < 0) die("sendmsg");
  close(dir);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: hanging-fs MOUNTPOINT (fd 3: a Unix socket)\n");
    return 2;
  }
  mountpoint = argv[1];
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1) die("tie to the parent");
  // A mount namespace of our own, private: the mount never propagates to the host.
  if (unshare(CLONE_NEWNS) < 0) die("unshare");
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make / private");
  fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fuse_fd < 0) die("open /dev/fuse");
  char options[128];
  snprintf(options, sizeof options, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fuse_fd);
  if (mount("hanging-fs", mountpoint, "fuse", MS_NOSUID | MS_NODEV, options) < 0) die("mount fuse");
  pthread_t opener;
  if (pthread_create(&opener, NULL, open_root, NULL) != 0) die("pthread_create");
  pthread_detach(opener);

  static char buffer[(1 << 20) + 4096];
  for (;;) {
    ssize_t got = read(fuse_fd, buffer, sizeof buffer);
    if (got < 0 && (errno == EINTR || errno == ENOENT)) continue;
    // Released by its last user: stay until killed, so the test sees that nobody waited for our end.
    // On 6.18 that release (the detached mount's last descriptor closed while a GETATTR of it is
    // unanswered) read as ECONNABORTED instead of ENODEV in 3 of 6 runs: the same end.
    if (got < 0 && (errno == ENODEV || errno == ECONNABORTED)) pause();
    if (got < (ssize_t)sizeof(struct in_header)) die("read /dev/fuse");
    const struct in_header *in = (const struct in_header *)buffer;
    switch (in->opcode) {
      case INIT: {
        struct init_out out = { .major = 7, .minor = 31, .max_write = 65536, .time_gran = 1, .max_pages = 16 };
        reply(in->unique, 0, &out, sizeof out);
        break;
      }
      case GETATTR:
        if (atomic_load(&opened)) {
          // The hostile part: never answered.
          printf("getattr\n");
          fflush(stdout);
          break;
        }
        // attr_valid 0: the next getattr comes to us again, uncached.
        struct attr_out out = { .attr = { .ino = 1, .mode = S_IFDIR | 0755, .nlink = 2, .blksize = 4096 } };
        reply(in->unique, 0, &out, sizeof out);
        break;
      case OPENDIR: {
        struct open_out out = { 0 };
        reply(in->unique, 0, &out, sizeof out);
        break;
      }
      case FORGET: case BATCH_FORGET: case INTERRUPT:
        break;  // no reply expected (an interrupted GETATTR stays unanswered too)
      case LOOKUP:
        reply(in->unique, ENOENT, NULL, 0);
        break;
      default:
        reply(in->unique, ENOSYS, NULL, 0);
    }
  }
}
