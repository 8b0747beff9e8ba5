// Where the session helper's sources and its generated wire constants are, for the suites that
// compile parts of it (build.mjs generates build/generated/wire.h from src/protocol/ before any suite runs).
import { fileURLToPath } from 'node:url';

export const NATIVE = fileURLToPath(new URL('../../native/session/', import.meta.url));
export const GENERATED = fileURLToPath(new URL('../../build/generated/', import.meta.url));
/** As build.mjs compiles the helper, warnings as errors. */
export const CFLAGS = ['-std=c11', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-Werror', `-I${GENERATED}`];
