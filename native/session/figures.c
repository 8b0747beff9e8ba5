// The session cgroup's figures, read by the helper (still inside it, so it surely exists) right
// before its END report: the files systemd reads for the unit's CPUUsageNSec (cpu.stat usage_usec),
// MemoryPeak (systemd 255 on: memory.peak), MemoryCurrent, TasksCurrent (pids.current) and
// IOReadBytes/IOWriteBytes (io.stat rbytes/wbytes summed over devices), for the client's end record.
// Read here, no property read waits in front of the unit's end signal: eight of them, sent by the
// worker on the END report, queued in PID 1 and the worker, 3–5 ms of every EXIT (traced). A file
// whose controller the cgroup lacks gives FIGURE_UNAVAILABLE, as systemd reports it.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helper.h"

// A decimal counter of at most 20 digits, then an optional newline; anything else is unavailable.
static uint64_t parse_counter(const char *text, size_t len) {
  if (len > 0 && text[len - 1] == '\n') len--;
  if (len == 0 || len > 20) return FIGURE_UNAVAILABLE;
  uint64_t value = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] < '0' || text[i] > '9') return FIGURE_UNAVAILABLE;
    uint64_t digit = (uint64_t)(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return FIGURE_UNAVAILABLE;
    value = value * 10 + digit;
  }
  return value;
}

// The whole of a small file, NUL-terminated; -1 when it cannot be read whole (no such controller,
// gone, a read error, or more than the buffer holds: a figure from part of a file would be wrong).
static ssize_t read_small(const char *dir, const char *name, char *buf, size_t size) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t total = 0;
  ssize_t n;
  // One byte more than the buffer keeps: reading it means the file does not fit.
  char spare;
  do {
    bool full = total + 1 >= size;
    n = read(fd, full ? &spare : buf + total, full ? 1 : size - 1 - total);
    if (n > 0 && full) n = -1, errno = EFBIG;
    if (n > 0) total += (size_t)n;
  } while (n > 0 || (n < 0 && errno == EINTR));
  close(fd);
  if (n < 0) return -1;
  buf[total] = '\0';
  return (ssize_t)total;
}

static uint64_t counter_file(const char *dir, const char *name) {
  char buf[64];
  ssize_t n = read_small(dir, name, buf, sizeof buf);
  return n < 0 ? FIGURE_UNAVAILABLE : parse_counter(buf, (size_t)n);
}

// The value of the first "key N" line (cpu.stat) or "key=N" word (io.stat) in `at`: 1 with *value
// set, 0 when there is none, -1 when its value is no counter.
static int keyed(const char *at, const char *key, char separator, uint64_t *value) {
  size_t klen = strlen(key);
  for (const char *p = at; (p = strstr(p, key)) != NULL; p += klen) {
    bool starts = p == at || p[-1] == ' ' || p[-1] == '\n';
    if (!starts || p[klen] != separator) continue;
    const char *text = p + klen + 1;
    *value = parse_counter(text, strcspn(text, " \n"));
    return *value == FIGURE_UNAVAILABLE ? -1 : 1;
  }
  return 0;
}

// Adds the line's `key` to *sum; a value that is no counter, or a sum past 2^64-2, makes the whole
// figure unavailable (systemd fails the read on such a value: unit_get_io_accounting_raw).
static void add(uint64_t *sum, const char *line, const char *key) {
  uint64_t value = 0;
  int found = keyed(line, key, '=', &value);
  if (*sum == FIGURE_UNAVAILABLE || found == 0) return;
  if (found < 0 || value > FIGURE_UNAVAILABLE - 1 - *sum) *sum = FIGURE_UNAVAILABLE;
  else *sum += value;
}

// io.stat: one line per device, "MAJ:MIN rbytes=N wbytes=N rios=N …"; summed as systemd sums them.
static void io_figures(const char *dir, uint64_t *read_bytes, uint64_t *write_bytes) {
  static char buf[65536];
  ssize_t n = read_small(dir, "io.stat", buf, sizeof buf);
  if (n < 0) return;
  *read_bytes = 0, *write_bytes = 0;
  for (char *line = buf; *line; ) {
    char *end = line + strcspn(line, "\n");
    char saved = *end;
    *end = '\0';
    add(read_bytes, line, "rbytes");
    add(write_bytes, line, "wbytes");
    if (!saved) break;
    line = end + 1;
  }
}

void read_figures_at(const char *dir, uint64_t figures[FIGURE_COUNT]) {
  for (int i = 0; i < FIGURE_COUNT; i++) figures[i] = FIGURE_UNAVAILABLE;
  char cpu[4096];
  if (read_small(dir, "cpu.stat", cpu, sizeof cpu) >= 0) {
    uint64_t usec = 0;
    if (keyed(cpu, "usage_usec", ' ', &usec) > 0 && usec <= UINT64_MAX / 1000) figures[FIGURE_CPU_NSEC] = usec * 1000;
  }
  figures[FIGURE_MEMORY_PEAK] = counter_file(dir, "memory.peak");
  figures[FIGURE_MEMORY_CURRENT] = counter_file(dir, "memory.current");
  figures[FIGURE_TASKS] = counter_file(dir, "pids.current");
  io_figures(dir, &figures[FIGURE_IO_READ], &figures[FIGURE_IO_WRITE]);
}

void read_figures(uint64_t figures[FIGURE_COUNT]) {
  char own[4096];
  // Only a service's own cgroup (a session unit), as kill_cgroup_others: never the root or a slice,
  // whose files would give the whole machine's or many units' figures as the session's.
  size_t len = cgroup_of("self", own, sizeof own) ? strlen(own) : 0;
  if (len < 9 || own[0] != '/' || strcmp(own + len - 8, ".service") != 0) {
    for (int i = 0; i < FIGURE_COUNT; i++) figures[i] = FIGURE_UNAVAILABLE;
    return;
  }
  char dir[4200];
  snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", own);
  read_figures_at(dir, figures);
}
