// Runs the session helper's cgroup figures reader (native/session/figures.c) on a directory of made-up
// cgroup files: argv[1] is the directory; prints the six figures, one a line, in control.h's order.
#include <inttypes.h>
#include <stdio.h>

#include "../../native/session/helper.h"

// figures.c finds its own cgroup through cgroup.c, which this driver leaves out.
bool cgroup_of(const char *pid, char *path, size_t size) {
  (void)pid, (void)path, (void)size;
  return false;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  uint64_t figures[FIGURE_COUNT];
  read_figures_at(argv[1], figures);
  for (int i = 0; i < FIGURE_COUNT; i++) printf("%" PRIu64 "\n", figures[i]);
  return 0;
}
