// ENV, the control channel's first message with --env-from-control: the program's environment, read
// before the fork, bounded by MAX_ENV_PAYLOAD and MAX_ENV_ENTRIES.
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bytes.h"
#include "helper.h"

static bool same_name(const char *a, const char *b) {
  size_t len = strcspn(a, "=");
  return strncmp(a, b, len) == 0 && b[len] == '=';
}

// The program's environment, read before the fork (--env-from-control): the helper's own environment
// (what systemd sets for the unit: HOME, USER, PATH ...) with the worker's entries over it. The helper
// itself never takes these (they are not in the unit's Environment=): they reach execve only. NULL on
// success, else why the message is refused; nothing here grows past MAX_ENV_PAYLOAD and MAX_ENV_ENTRIES.
const char *control_read_env(struct link *link, char ***envp) {
  static char payload[MAX_ENV_PAYLOAD];
  static char *entries[MAX_ENV_ENTRIES];
  unsigned char header[CONTROL_HEADER_SIZE];
  if (transfer_all(link->fd, header, sizeof header, POLLIN) < 0) return "the control channel ended before the environment came";
  if (header[0] != CONTROL_ENV) return "the first control message is not ENV";
  uint32_t len = get_be32(header + 1);
  if (len > MAX_ENV_PAYLOAD) return "ENV is larger than 65536 bytes";
  if (transfer_all(link->fd, (unsigned char *)payload, len, POLLIN) < 0) return "the control channel ended inside ENV";
  if (len > 0 && payload[len - 1] != '\0') return "ENV does not end with a NUL";
  size_t count = 0;
  for (size_t off = 0; off < len;) {
    char *entry = payload + off;
    size_t entry_len = strlen(entry);
    const char *eq = memchr(entry, '=', entry_len);
    if (eq == NULL || eq == entry) return "an ENV entry is not NAME=value";
    if (count == MAX_ENV_ENTRIES) return "ENV has more than 129 entries";
    entries[count++] = entry;
    off += entry_len + 1;
  }
  extern char **environ;
  size_t own = 0;
  while (environ[own]) own++;
  char **merged = calloc(own + count + 1, sizeof *merged);
  if (merged == NULL) return "out of memory";
  size_t k = 0;
  for (size_t i = 0; i < own; i++) {
    bool overridden = false;
    for (size_t j = 0; j < count && !overridden; j++) overridden = same_name(entries[j], environ[i]);
    if (!overridden) merged[k++] = environ[i];
  }
  for (size_t j = 0; j < count; j++) merged[k++] = entries[j];
  merged[k] = NULL;
  *envp = merged;
  return NULL;
}
