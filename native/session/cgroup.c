// Signals to every process of the session's cgroup except the helper: STOP's last step (SIGKILL, so
// the helper lives to drain the program's last output and report), and the steps of an end the
// helper drives itself (child.c). systemd 252's KillUnit has no "all but the
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
static int signal_pass(struct link *link, const char *procs, const char *own, int sig) {
  FILE *f = fopen(procs, "re");
  if (!f) {
    say(link, 3, "cannot list the session's processes (%s): %s", procs, strerror(errno));
    return 0;
  }
  int signalled = 0;
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
        syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0)
      signalled++;
    close(pidfd);
  }
  fclose(f);
  return signalled;
}

// `sig` to every process of the session's unit but the helper.
void signal_unit_others(struct session *s, int sig) {
  char own[4096];
  if (!cgroup_of("self", own, sizeof own)) {
    say(&s->worker, 3, "cannot read the session's cgroup: %s", strerror(errno));
    return;
  }
  // Only inside the cgroup of the unit STARTED named (a session unit): never a slice, a scope, the
  // root or another service (a helper run by hand inside one), where "every other process" would be
  // far more than the session.
  size_t len = strlen(own), unit = strlen(s->unit);
  if (unit < 9 || strcmp(s->unit + unit - 8, ".service") != 0 || len <= unit || own[len - unit - 1] != '/' ||
      strcmp(own + len - unit, s->unit) != 0) {
    say(&s->worker, 3, "not in the cgroup of the session's unit (%s): nothing is signalled", own);
    return;
  }
  char procs[4200];
  snprintf(procs, sizeof procs, "/sys/fs/cgroup%s/cgroup.procs", own);
  // A process may fork between the listing and SIGKILL; a few more passes catch its children (a
  // killed process forks no more). Other signals go once: a second pass would send them twice.
  // The worker's stop of the unit is the backstop.
  for (int pass = 0; pass < (sig == SIGKILL ? 16 : 1) && signal_pass(&s->worker, procs, own, sig) > 0; pass++) {
  }
}
