// The opencode-ptyctl command from the sources (the build's entry is src/boot/cli.ts, which runs the
// same program from its bundle and code cache).
import { run } from './program.ts';

run();
