// Big-endian fields, as every frame of the protocol and the control channel lays them out.
#ifndef OPENCODE_PTY_SESSION_BYTES_H
#define OPENCODE_PTY_SESSION_BYTES_H

#include <stdint.h>

static inline uint16_t get_be16(const unsigned char *p) {
  return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline uint32_t get_be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void put_be16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 8), p[1] = (unsigned char)v;
}

static inline void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static inline void put_be64(unsigned char *p, uint64_t v) {
  put_be32(p, (uint32_t)(v >> 32));
  put_be32(p + 4, (uint32_t)v);
}

#endif
