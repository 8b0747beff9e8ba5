// A FUSE file system spoken on /dev/fuse with no library, one of whose calls is never answered: for
// testing that a descriptor on it (a START's directory, a file a peer sends) holds no root process.
// Its tree: the root directory (node 1) and one file `f` (node 2), owned by the serving uid.
// Layouts from the kernel's include/uapi/linux/fuse.h (protocol 7.31 is enough for these requests).
//
// Usage: hang-fs [options] MOUNTPOINT
//   --hang getattr|flush     the call left unanswered (each one left is printed as "getattr"/"flush" on stdout)
//   --hang-after-open        answer GETATTR until the root is opened (with --send-root: until it is sent)
//   --hang-file PATH         decide per request: hang what PATH holds ("flush", else getattr) while it exists
//   --as UID                 mount for UID (user_id/group_id) and serve as UID:UID, as fusermount would
//   --allow-other            mount with allow_other (fusermount with user_allow_other); without it root's
//                            stat of its files fails with EACCES
//   --own-namespace          mount in a private mount namespace of its own (the host never sees it)
//   --send-root              open and stat the root, detach the mount (the fd keeps it alive) and send
//                            the fd on fd 3 with its device and inode (two native-endian u64)
//   --send-file              a child, as the serving user, sends `f` twice on fd 3 (one byte and one fd
//                            a message), then writes "sent" to stderr
//   --with-parent            dies with its parent (PDEATHSIG)
//   --end-after SECONDS      ends itself then (its end aborts the connection, releasing what waits on it)
// It writes "hang-fs: mounted" to stderr once mounted. Once its last user releases it, it stays until
// killed, so a test sees that nobody waited for its end.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum hang { HANG_NONE, HANG_GETATTR, HANG_FLUSH };

static struct {
  enum hang hang;
  int after_open, allow_other, own_namespace, send_root, send_file, with_parent, end_after;
  const char *hang_file, *mountpoint;
  unsigned id;
} opt;
static int fuse_fd;
static atomic_int opened;

__attribute__((noreturn)) static void die(const char *what) {
  fprintf(stderr, "hang-fs: %s: %s\n", what, strerror(errno));
  _exit(1);
}

static void reply(uint64_t unique, int error, const void *body, size_t size) {
  struct fuse_out_header header = { (uint32_t)(sizeof header + size), -error, unique };
  struct iovec parts[2] = { { &header, sizeof header }, { (void *)body, size } };
  // ENOENT: the request was interrupted meanwhile; nothing to do.
  if (writev(fuse_fd, parts, body ? 2 : 1) < 0 && errno != ENOENT) die("write /dev/fuse");
}

static void send_fd(int fd, const void *bytes, size_t size) {
  struct iovec iov = { (void *)bytes, size };
  union { struct cmsghdr align; char space[CMSG_SPACE(sizeof(int))]; } control;
  struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space };
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
  if (sendmsg(3, &message, MSG_NOSIGNAL) != (ssize_t)size) die("sendmsg");
}

// --send-root, on a thread of its own (the loop answers the open): the device and inode numbers are
// what a client would put in START for this directory.
static void *send_root(void *unused) {
  (void)unused;
  int dir = open(opt.mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (dir < 0 || fstat(dir, &st) < 0) die("open the mount");
  atomic_store(&opened, 1);
  if (umount2(opt.mountpoint, MNT_DETACH) < 0) die("umount2");
  uint64_t ids[2] = { st.st_dev, st.st_ino };
  send_fd(dir, ids, sizeof ids);
  close(dir);
  return NULL;
}

// --send-file, in a child as the serving user that holds no copy of the device: while any holder
// lives the connection is never aborted, and a sender waiting in its own exit's FLUSH with its copy
// still open would hold it for good.
static void send_file(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/f", opt.mountpoint);
  int file = open(path, O_RDONLY);
  if (file < 0) die("open f");
  for (int i = 0; i < 2; i++) send_fd(file, "x", 1);
  fprintf(stderr, "sent\n");
  _exit(0);  // its own close sends a FLUSH too: with --hang flush it waits for the file system's end
}

static enum hang hanging(void) {
  if (opt.hang_file) {
    char mode[16] = "";
    int file = open(opt.hang_file, O_RDONLY | O_CLOEXEC);
    if (file < 0) return HANG_NONE;
    ssize_t got = read(file, mode, sizeof mode - 1);
    close(file);
    return got >= 5 && strncmp(mode, "flush", 5) == 0 ? HANG_FLUSH : HANG_GETATTR;
  }
  if (opt.after_open && !atomic_load(&opened)) return HANG_NONE;
  return opt.hang;
}

static void left(const char *what) {
  printf("%s\n", what);
  fflush(stdout);
}

__attribute__((noreturn)) static void serve(void) {
  static char buffer[(1 << 20) + 4096];
  for (;;) {
    ssize_t got = read(fuse_fd, buffer, sizeof buffer);
    if (got < 0 && (errno == EINTR || errno == ENOENT)) continue;
    // Released by its last user: stay until killed. On 6.18 that release (the detached mount's last
    // descriptor closed while a GETATTR of it is unanswered) read as ECONNABORTED instead of ENODEV in
    // 3 of 6 runs: the same end.
    if (got < 0 && (errno == ENODEV || errno == ECONNABORTED)) for (;;) pause();
    if (got < (ssize_t)sizeof(struct fuse_in_header)) die("read /dev/fuse");
    const struct fuse_in_header *in = (const struct fuse_in_header *)buffer;
    enum hang hang = hanging();
    switch (in->opcode) {
      case FUSE_INIT: {
        struct fuse_init_out out = { .major = 7, .minor = 31, .max_readahead = 65536, .max_write = 65536, .max_background = 16, .congestion_threshold = 12, .time_gran = 1, .max_pages = 16 };
        reply(in->unique, 0, &out, sizeof out);
        break;
      }
      case FUSE_GETATTR: {
        if (hang == HANG_GETATTR) {
          left("getattr");
          break;
        }
        // attr_valid 0: the next getattr comes to us again, uncached.
        struct fuse_attr_out out = { .attr = { .ino = in->nodeid, .mode = in->nodeid == 2 ? S_IFREG | 0644 : S_IFDIR | 0755, .nlink = in->nodeid == 2 ? 1 : 2, .uid = opt.id, .gid = opt.id, .blksize = 4096 } };
        reply(in->unique, 0, &out, sizeof out);
        break;
      }
      case FUSE_LOOKUP: {
        if (strcmp(buffer + sizeof *in, "f") != 0) {
          reply(in->unique, ENOENT, NULL, 0);
          break;
        }
        struct fuse_entry_out out = { .nodeid = 2, .attr = { .ino = 2, .mode = S_IFREG | 0644, .nlink = 1, .uid = opt.id, .gid = opt.id } };
        reply(in->unique, 0, &out, sizeof out);
        break;
      }
      case FUSE_OPEN: case FUSE_OPENDIR: {
        struct fuse_open_out out = { 0 };
        reply(in->unique, 0, &out, sizeof out);
        break;
      }
      case FUSE_RELEASE: case FUSE_RELEASEDIR:
        reply(in->unique, 0, NULL, 0);
        break;
      case FUSE_FLUSH:
        if (hang == HANG_FLUSH) left("flush");
        else reply(in->unique, 0, NULL, 0);
        break;
      case FUSE_FORGET: case FUSE_BATCH_FORGET: case FUSE_INTERRUPT:
        break;  // no reply expected (an interrupted call left hanging stays unanswered too)
      default:
        reply(in->unique, ENOSYS, NULL, 0);
    }
  }
}

static int usage(void) {
  fprintf(stderr, "usage: hang-fs [--hang getattr|flush] [--hang-after-open] [--hang-file PATH] [--as UID] [--allow-other] [--own-namespace] [--send-root|--send-file] [--with-parent] [--end-after SECONDS] MOUNTPOINT\n");
  return 2;
}

static int parse(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(arg, "--hang") && value) {
      opt.hang = !strcmp(value, "flush") ? HANG_FLUSH : !strcmp(value, "getattr") ? HANG_GETATTR : HANG_NONE;
      if (opt.hang == HANG_NONE) return -1;
      i++;
    } else if (!strcmp(arg, "--hang-file") && value) opt.hang_file = argv[++i];
    else if (!strcmp(arg, "--as") && value) opt.id = (unsigned)atoi(argv[++i]);
    else if (!strcmp(arg, "--end-after") && value) opt.end_after = atoi(argv[++i]);
    else if (!strcmp(arg, "--hang-after-open")) opt.after_open = 1;
    else if (!strcmp(arg, "--allow-other")) opt.allow_other = 1;
    else if (!strcmp(arg, "--own-namespace")) opt.own_namespace = 1;
    else if (!strcmp(arg, "--send-root")) opt.send_root = 1;
    else if (!strcmp(arg, "--send-file")) opt.send_file = 1;
    else if (!strcmp(arg, "--with-parent")) opt.with_parent = 1;
    else if (arg[0] != '-' && !opt.mountpoint) opt.mountpoint = arg;
    else return -1;
  }
  return opt.mountpoint ? 0 : -1;
}

int main(int argc, char **argv) {
  if (parse(argc, argv) < 0) return usage();
  if (opt.end_after > 0) alarm((unsigned)opt.end_after);
  if (opt.with_parent && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)) die("tie to the parent");
  if (opt.own_namespace) {
    // Private: the mount never propagates to the host.
    if (unshare(CLONE_NEWNS) < 0) die("unshare");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make / private");
  }
  fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fuse_fd < 0) die("open /dev/fuse");
  char options[256];
  snprintf(options, sizeof options, "fd=%d,rootmode=40000,user_id=%u,group_id=%u%s", fuse_fd, opt.id, opt.id, opt.allow_other ? ",allow_other" : "");
  if (mount("hang-fs", opt.mountpoint, "fuse.hang-fs", MS_NOSUID | MS_NODEV, options) < 0) die("mount fuse");
  if (opt.id != 0 && (setgroups(0, NULL) || setgid(opt.id) || setuid(opt.id))) die("drop to --as");
  fprintf(stderr, "hang-fs: mounted\n");
  if (opt.send_root) {
    pthread_t sender;
    if (pthread_create(&sender, NULL, send_root, NULL) != 0) die("pthread_create");
    pthread_detach(sender);
  }
  if (opt.send_file) {
    if (fork() == 0) {
      close(fuse_fd);
      send_file();
    }
    close(3);
  }
  serve();
}
