// STOP's last step: SIGKILL every process of the session's cgroup except the helper, so the helper
// lives to drain the program's last output and report. systemd 252's KillUnit has no "all but the
// main process" (org.freedesktop.systemd1(5)); KillUnit(all, SIGKILL) would end the helper unreported.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helper.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

// The "0::/path" line of /proc/<pid>/cgroup (cgroup v2); false when it cannot be read.
bool cgroup_of(const char *pid, char *path, size_t size) {
  char file[64];
  snprintf(file, sizeof file, "/proc/%s/cgroup", pid);
  FILE *f = fopen(file, "re");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, "0::", 3) != 0) continue;
    line[strcspn(line, "\n")] = '\0';
    snprintf(path, size, "%s", line + 3);
    found = true;
  }
  fclose(f);
  return found;
}

// One pass over cgroup.procs; returns how many processes were signalled.
static int kill_pass(const char *procs, const char *own) {
  FILE *f = fopen(procs, "re");
  if (!f) {
    say(3, "cannot list the session's processes (%s): %s", procs, strerror(errno));
    return 0;
  }
  int killed = 0;
  char line[32];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    long pid = strtol(line, NULL, 10);
    if (pid <= 0 || pid == getpid()) continue;
    // The pidfd pins the process: if it died and its number was reused, the cgroup check below
    // reads the newcomer's, and pidfd_send_signal still goes to the one that died (ESRCH).
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pidfd < 0) continue;
    char path[4096];
    if (cgroup_of(line, path, sizeof path) && strcmp(path, own) == 0 &&
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0)
      killed++;
    close(pidfd);
  }
  fclose(f);
  return killed;
}

void kill_cgroup_others(void) {
  char own[4096];
  if (!cgroup_of("self", own, sizeof own)) {
    say(3, "cannot read the session's cgroup: %s", strerror(errno));
    return;
  }
  // Only inside a service's own cgroup (a session unit): never a slice, a scope or the root, where
  // "every other process" would be far more than the session.
  size_t len = strlen(own);
  if (len < 8 || strcmp(own + len - 8, ".service") != 0) {
    say(3, "not in a service's cgroup (%s): nothing is killed", own);
    return;
  }
  char procs[4200];
  snprintf(procs, sizeof procs, "/sys/fs/cgroup%s/cgroup.procs", own);
  // A process may fork between the listing and the kill; a few more passes catch its children (a
  // killed process forks no more). The worker's stop of the unit is the backstop.
  for (int pass = 0; pass < 16 && kill_pass(procs, own) > 0; pass++) {
  }
}
